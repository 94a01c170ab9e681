CREATE TABLE `domain_reservations` (
	`domain` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`reserved_until` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `domain_verification_tokens` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`token` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `__new_app_domains` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`domain` text NOT NULL,
	`verified_at` integer,
	`checked_at` integer,
	`check_problem` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Domains added before proof of ownership existed routed already: they count as verified (README, "Custom domains").
INSERT INTO `__new_app_domains` (`id`, `app_id`, `workspace_id`, `domain`, `verified_at`, `checked_at`, `check_problem`, `created_at`)
	SELECT `app_domains`.`id`, `app_domains`.`app_id`, `apps`.`workspace_id`, `app_domains`.`domain`, `app_domains`.`created_at`, NULL, NULL, `app_domains`.`created_at`
	FROM `app_domains` INNER JOIN `apps` ON `apps`.`id` = `app_domains`.`app_id`;
--> statement-breakpoint
DROP TABLE `app_domains`;--> statement-breakpoint
ALTER TABLE `__new_app_domains` RENAME TO `app_domains`;--> statement-breakpoint
CREATE UNIQUE INDEX `app_domains_workspace_domain` ON `app_domains` (`workspace_id`,`domain`);--> statement-breakpoint
CREATE UNIQUE INDEX `app_domains_verified_domain` ON `app_domains` (`domain`) WHERE "app_domains"."verified_at" IS NOT NULL;