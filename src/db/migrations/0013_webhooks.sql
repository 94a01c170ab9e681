CREATE TABLE `github_installations` (
	`installation_id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`bound_by_user_id` text,
	`bound_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
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
ALTER TABLE `apps` ADD `webhook_secret_encrypted` text;--> statement-breakpoint
-- Installations already in use stay with the one workspace whose apps use them (the earlier rule
-- let no other workspace use one); one used by several workspaces is bound to none until set up again.
INSERT INTO `github_installations` (`installation_id`, `workspace_id`, `bound_by_user_id`, `bound_at`)
SELECT `repo_installation_id`, MIN(`workspace_id`), NULL, CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM `apps`
WHERE `repo_installation_id` IS NOT NULL GROUP BY `repo_installation_id` HAVING COUNT(DISTINCT `workspace_id`) = 1;
