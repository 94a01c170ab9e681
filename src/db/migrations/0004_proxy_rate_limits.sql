ALTER TABLE `apps` ADD `proxy_client_burst` integer;--> statement-breakpoint
ALTER TABLE `apps` ADD `proxy_client_rps` integer;--> statement-breakpoint
ALTER TABLE `apps` ADD `proxy_host_burst` integer;--> statement-breakpoint
ALTER TABLE `apps` ADD `proxy_host_rps` integer;