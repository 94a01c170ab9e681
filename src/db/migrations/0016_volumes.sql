CREATE TABLE `volumes` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`app_id` text,
	`mount_path` text NOT NULL,
	`machine_id` text NOT NULL,
	`engine_volume_name` text NOT NULL,
	`size_bytes` integer,
	`size_measured_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `volumes_workspace_name` ON `volumes` (`workspace_id`,`name`);--> statement-breakpoint
CREATE INDEX `volumes_app` ON `volumes` (`app_id`);