CREATE TABLE `app_env_vars` (
	`app_id` text NOT NULL,
	`name` text NOT NULL,
	`ciphertext` text NOT NULL,
	PRIMARY KEY(`app_id`, `name`),
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `apps` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`runtime` text NOT NULL,
	`status` text NOT NULL,
	`status_reason` text,
	`memory_mb` integer NOT NULL,
	`expose_port` integer,
	`subdomain` text,
	`startup_command` text NOT NULL,
	`auto_restart` integer NOT NULL,
	`auto_deploy` integer NOT NULL,
	`machine_id` text NOT NULL,
	`current_build_id` text,
	`container_id` text,
	`host_port` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `apps_subdomain_unique` ON `apps` (`subdomain`);--> statement-breakpoint
CREATE UNIQUE INDEX `apps_workspace_name` ON `apps` (`workspace_id`,`name`);--> statement-breakpoint
CREATE TABLE `builds` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`image` text,
	`error` text,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `builds_app_time` ON `builds` (`app_id`,`started_at`);--> statement-breakpoint
CREATE TABLE `database_operations` (
	`id` text PRIMARY KEY NOT NULL,
	`database_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`error` text,
	`actor_type` text NOT NULL,
	`actor_id` text,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`database_id`) REFERENCES `databases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `database_operations_database_time` ON `database_operations` (`database_id`,`started_at`);--> statement-breakpoint
CREATE TABLE `databases` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`engine` text NOT NULL,
	`version` text NOT NULL,
	`status` text NOT NULL,
	`status_reason` text,
	`memory_mb` integer NOT NULL,
	`storage_gb` integer NOT NULL,
	`username` text NOT NULL,
	`password_ciphertext` text NOT NULL,
	`database_name` text NOT NULL,
	`machine_id` text NOT NULL,
	`container_id` text,
	`volume_name` text NOT NULL,
	`host_port` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `databases_workspace_name` ON `databases` (`workspace_id`,`name`);