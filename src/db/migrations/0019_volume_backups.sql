CREATE TABLE `volume_backup_schedules` (
	`volume_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`cron` text NOT NULL,
	`keep_last` integer NOT NULL,
	`keep_daily_days` integer NOT NULL,
	`keep_weekly_weeks` integer NOT NULL,
	`verify` integer NOT NULL,
	`last_run_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`volume_id`) REFERENCES `volumes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `volume_backups` (
	`id` text PRIMARY KEY NOT NULL,
	`volume_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`machine_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`storage_key` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`sha256` text,
	`archive_bytes` integer,
	`error` text,
	`verified_at` integer,
	`verification` text,
	`copies` text,
	`operation_id` text,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`volume_id`) REFERENCES `volumes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `volume_backups_volume` ON `volume_backups` (`volume_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `volume_restores` (
	`id` text PRIMARY KEY NOT NULL,
	`volume_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`backup_id` text NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`actor_type` text NOT NULL,
	`actor_id` text,
	`previous_engine_volume_name` text NOT NULL,
	`new_engine_volume_name` text NOT NULL,
	`stopped_app_id` text,
	`previous_removed_at` integer,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`volume_id`) REFERENCES `volumes`(`id`) ON UPDATE no action ON DELETE cascade
);
