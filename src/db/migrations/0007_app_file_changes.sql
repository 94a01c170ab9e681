CREATE TABLE `app_file_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`action` text NOT NULL,
	`paths` text NOT NULL,
	`path_count` integer NOT NULL,
	`actor_type` text NOT NULL,
	`actor_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `app_file_changes_app_time` ON `app_file_changes` (`app_id`,`created_at`);--> statement-breakpoint
ALTER TABLE `apps` ADD `files_changed_at` integer;