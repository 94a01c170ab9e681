ALTER TABLE `app_domains` ADD `record_present` integer;--> statement-breakpoint
ALTER TABLE `app_domains` ADD `lost_at` integer;--> statement-breakpoint
-- Workspaces whose claims came from before proof of ownership get their token now: tokens are made with a workspace's first claim, never while answering a read.
INSERT INTO `domain_verification_tokens` (`workspace_id`, `token`, `created_at`)
	SELECT `id`, 'platform-verification=' || lower(hex(randomblob(16))), CAST(strftime('%s', 'now') AS integer) * 1000
	FROM `workspaces`
	WHERE `id` IN (SELECT `workspace_id` FROM `app_domains`) AND `id` NOT IN (SELECT `workspace_id` FROM `domain_verification_tokens`);
