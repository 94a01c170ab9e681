CREATE TABLE `registry_credentials` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`registry` text NOT NULL,
	`username` text NOT NULL,
	`password_encrypted` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `registry_credentials_workspace_registry` ON `registry_credentials` (`workspace_id`,`registry`);--> statement-breakpoint
ALTER TABLE `apps` ADD `image` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `container_user` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `image_digest` text;