CREATE TABLE `database_backup_schedules` (
	`database_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`cron` text NOT NULL,
	`keep_last` integer NOT NULL,
	`keep_daily_days` integer NOT NULL,
	`keep_weekly_weeks` integer NOT NULL,
	`verify` integer NOT NULL,
	`last_run_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`database_id`) REFERENCES `databases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `database_backups` ADD `verification` text;--> statement-breakpoint
ALTER TABLE `database_backups` ADD `copies` text;--> statement-breakpoint
ALTER TABLE `database_backups` ADD `operation_id` text;--> statement-breakpoint
ALTER TABLE `database_operations` ADD `backup_id` text;