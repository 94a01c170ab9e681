CREATE TABLE `database_backups` (
	`id` text PRIMARY KEY NOT NULL,
	`database_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`storage_key` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`sha256` text,
	`engine` text NOT NULL,
	`engine_version` text NOT NULL,
	`format` text NOT NULL,
	`error` text,
	`verified_at` integer,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`database_id`) REFERENCES `databases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `database_backups_database_time` ON `database_backups` (`database_id`,`created_at`);