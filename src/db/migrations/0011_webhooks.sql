CREATE TABLE `webhook_deliveries` (
	`scope` text NOT NULL,
	`delivery_id` text NOT NULL,
	`body_sha256` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`scope`, `delivery_id`)
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_body` ON `webhook_deliveries` (`scope`,`body_sha256`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_time` ON `webhook_deliveries` (`received_at`);--> statement-breakpoint
ALTER TABLE `apps` ADD `webhook_secret_encrypted` text;