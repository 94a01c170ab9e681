// An app's own secrets that outside callers prove themselves with: its GitHub webhook's (src/webhooks)
// and its deploy-hook URL's (./service.ts). Random, made on first read, stored encrypted bound to the
// app and the kind of secret (the check needs them back), and replaced on demand.
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../../db";
import type { SecretBox } from "../../crypto/secrets";
import { randomBase62 } from "../../crypto/tokens";
import { apps } from "../../db/schema";
import type { AppRow } from "../deployer";

const SECRET_LENGTH = 40;

const KINDS = {
  webhook: { column: "webhookSecretEncrypted", data: (appId: string) => `app-webhook-secret:${appId}` },
  deployHook: { column: "deployHookEncrypted", data: (appId: string) => `app-deploy-hook:${appId}` },
} as const;

export type AppSecretKind = keyof typeof KINDS;

export interface AppSecretStore {
  db: PlatformDb;
  secrets: SecretBox;
}

/** The app's secret of that kind; null while none was made. */
export function storedAppSecret(secrets: SecretBox, app: AppRow, kind: AppSecretKind): string | null {
  const encrypted = app[KINDS[kind].column];
  return encrypted ? secrets.decrypt(encrypted, KINDS[kind].data(app.id)) : null;
}

/** The app's secret of that kind, made on first read. */
export function appSecret(store: AppSecretStore, app: AppRow, kind: AppSecretKind): string {
  return storedAppSecret(store.secrets, app, kind) ?? rotateAppSecret(store, app, kind);
}

/** A new secret of that kind: the one before it stops working at once. */
export function rotateAppSecret(store: AppSecretStore, app: AppRow, kind: AppSecretKind): string {
  const secret = randomBase62(SECRET_LENGTH);
  const { column, data } = KINDS[kind];
  store.db.update(apps).set({ [column]: store.secrets.encrypt(secret, data(app.id)) }).where(eq(apps.id, app.id)).run();
  return secret;
}
