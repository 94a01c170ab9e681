ALTER TABLE `api_keys` ADD `other_workspace_ids` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `cpus` real;--> statement-breakpoint
ALTER TABLE `apps` ADD `serving_port` integer;--> statement-breakpoint
ALTER TABLE `databases` ADD `cpus` real;--> statement-breakpoint
-- Apps serving before this migration listen where exposePort says (or the default 3000).
UPDATE `apps` SET `serving_port` = COALESCE(`expose_port`, 3000) WHERE `container_id` IS NOT NULL;