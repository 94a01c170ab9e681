CREATE TABLE `app_domains` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`domain` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `app_domains_domain_unique` ON `app_domains` (`domain`);