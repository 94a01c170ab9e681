ALTER TABLE `apps` ADD `builder` text DEFAULT 'auto' NOT NULL;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_id` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_owner` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_name` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_branch` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_path` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_installation_id` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `repo_token_encrypted` text;--> statement-breakpoint
ALTER TABLE `apps` ADD `deploy_hook_encrypted` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `image_removed_at` integer;--> statement-breakpoint
ALTER TABLE `builds` ADD `commit_sha` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `commit_message` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `rollback_of` text;