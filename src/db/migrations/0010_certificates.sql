CREATE TABLE `certificates` (
	`host` text PRIMARY KEY NOT NULL,
	`source` text NOT NULL,
	`not_before` integer,
	`not_after` integer,
	`last_error` text,
	`last_attempt_at` integer,
	`failures` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `apps` ADD `https_redirect` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `apps` ADD `hsts` integer DEFAULT false NOT NULL;