ALTER TABLE `apps` ADD `stopped_first_container_id` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `delete_volumes` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `volumes` ADD `engine_volume_made_at` integer;