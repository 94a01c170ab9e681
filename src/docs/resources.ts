// Every named schema of the OpenAPI document (components.schemas), from the domains that answer them.
import { LIST_META } from "../http/responses";
import { APP_RESOURCES } from "../apps/model";
import { FILE_RESOURCES } from "../apps/files/model";
import { AppHistoryEventSchema } from "../apps/history";
import { REPOSITORY_RESOURCES } from "../apps/repository/model";
import { WEBHOOK_RESOURCES } from "../webhooks/model";
import { GITHUB_APP_RESOURCES } from "../git/model";
import { DOMAIN_RESOURCES } from "../apps/domains/model";
import { CERTIFICATE_RESOURCES } from "../certificates/model";
import { API_KEY_RESOURCES } from "../api-keys/model";
import { DATABASE_RESOURCES } from "../databases/model";
import { MACHINE_RESOURCES } from "../machines/model";
import { ORGANIZATION_RESOURCES } from "../organization/model";
import { PLATFORM_RESOURCES } from "../platform/model";
import { SESSION_RESOURCES } from "../auth/model";
import { QUOTA_RESOURCES } from "../quotas/model";
import { REGISTRY_RESOURCES } from "../registries/model";
import { VOLUME_BACKUP_RESOURCES } from "../volumes/backup-model";
import { VOLUME_RESOURCES } from "../volumes/model";

export const RESOURCES = [
  LIST_META,
  ...APP_RESOURCES,
  ...FILE_RESOURCES,
  AppHistoryEventSchema,
  ...REPOSITORY_RESOURCES,
  ...WEBHOOK_RESOURCES,
  ...GITHUB_APP_RESOURCES,
  ...DOMAIN_RESOURCES,
  ...CERTIFICATE_RESOURCES,
  ...API_KEY_RESOURCES,
  ...DATABASE_RESOURCES,
  ...MACHINE_RESOURCES,
  ...ORGANIZATION_RESOURCES,
  ...PLATFORM_RESOURCES,
  ...SESSION_RESOURCES,
  ...QUOTA_RESOURCES,
  ...REGISTRY_RESOURCES,
  ...VOLUME_BACKUP_RESOURCES,
  ...VOLUME_RESOURCES,
];
