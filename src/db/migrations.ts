// Migrations embedded in the binary. drizzle's own migrator reads them from disk, which a
// compiled executable has no folder for, so each SQL file is imported as text here and handed
// to drizzle's dialect in journal order. A unit test checks this list against the journal.
import journal from "./migrations/meta/_journal.json" with { type: "json" };
import m0000 from "./migrations/0000_init.sql" with { type: "text" };
import m0001 from "./migrations/0001_apps_and_databases.sql" with { type: "text" };
import m0002 from "./migrations/0002_api_key_start.sql" with { type: "text" };
import m0003 from "./migrations/0003_hardening.sql" with { type: "text" };
import m0004 from "./migrations/0004_proxy_rate_limits.sql" with { type: "text" };
import m0005 from "./migrations/0005_database_backups.sql" with { type: "text" };
import m0006 from "./migrations/0006_backup_schedules_and_copies.sql" with { type: "text" };
import m0007 from "./migrations/0007_app_file_changes.sql" with { type: "text" };
import m0008 from "./migrations/0008_git_deploys.sql" with { type: "text" };
import m0009 from "./migrations/0009_app_domains.sql" with { type: "text" };
import m0010 from "./migrations/0010_certificates.sql" with { type: "text" };
import m0011 from "./migrations/0011_two_factor.sql" with { type: "text" };
import m0012 from "./migrations/0012_domains.sql" with { type: "text" };
import m0013 from "./migrations/0013_webhooks.sql" with { type: "text" };
import m0014 from "./migrations/0014_domains_takeover.sql" with { type: "text" };
import m0015 from "./migrations/0015_release_recovery.sql" with { type: "text" };
import m0016 from "./migrations/0016_volumes.sql" with { type: "text" };
import m0017 from "./migrations/0017_image_deploys.sql" with { type: "text" };
import m0018 from "./migrations/0018_health.sql" with { type: "text" };
import m0019 from "./migrations/0019_volume_backups.sql" with { type: "text" };
import m0020 from "./migrations/0020_release_strategy.sql" with { type: "text" };
import m0021 from "./migrations/0021_image-pull-names.sql" with { type: "text" };

export const EMBEDDED_MIGRATIONS: Record<string, string> = {
  "0000_init": m0000,
  "0001_apps_and_databases": m0001,
  "0002_api_key_start": m0002,
  "0003_hardening": m0003,
  "0004_proxy_rate_limits": m0004,
  "0005_database_backups": m0005,
  "0006_backup_schedules_and_copies": m0006,
  "0007_app_file_changes": m0007,
  "0008_git_deploys": m0008,
  "0009_app_domains": m0009,
  "0010_certificates": m0010,
  "0011_two_factor": m0011,
  "0012_domains": m0012,
  "0013_webhooks": m0013,
  "0014_domains_takeover": m0014,
  "0015_release_recovery": m0015,
  "0016_volumes": m0016,
  "0017_image_deploys": m0017,
  "0018_health": m0018,
  "0019_volume_backups": m0019,
  "0020_release_strategy": m0020,
  "0021_image-pull-names": m0021,
};

export interface MigrationMeta {
  sql: string[];
  bps: boolean;
  folderMillis: number;
  hash: string;
}

export function embeddedMigrations(): MigrationMeta[] {
  return journal.entries.map((entry) => {
    const query = EMBEDDED_MIGRATIONS[entry.tag];
    if (query === undefined) throw new Error(`migration ${entry.tag} is in the journal but not embedded`);
    return {
      sql: query.split("--> statement-breakpoint"),
      bps: entry.breakpoints,
      folderMillis: entry.when,
      hash: new Bun.CryptoHasher("sha256").update(query).digest("hex"),
    };
  });
}

export const MIGRATION_JOURNAL_TAGS: string[] = journal.entries.map((entry) => entry.tag);
