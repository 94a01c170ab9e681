// Registry credentials per workspace: stored with the password sealed by the SecretBox (the row id
// is its associated data, so a ciphertext copied to another row does not open), listed without it,
// checked by a real login the engine makes, and handed only to that workspace's pulls
// (src/apps/images/pull.ts). A registry host must be one image deploys may pull from at all
// (src/apps/dockerfile-images.ts): the engine contacts it from the host's network.
import { and, eq } from "drizzle-orm";
import type { Static } from "@sinclair/typebox";
import type { PlatformDb } from "../db";
import { registryCredentials } from "../db/schema";
import type { SecretBox } from "../crypto/secrets";
import { newId } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import type { DockerDriver } from "../docker/driver";
import type { RegistryAuth } from "../docker/images";
import { lookupHost, parseImageReference, registryAddressRefusal, registryPullRefusal, type HostLookup } from "../apps/dockerfile-images";
import type { RegistryCredentialSchema } from "./model";

type CredentialRow = typeof registryCredentials.$inferSelect;

/** What the registry says is shown this long at most: it is the registry's text, not ours. */
const MAX_MESSAGE_LENGTH = 300;
/** Control characters in a user name would forge log lines; a colon cannot be sent in Basic auth. */
const PLAIN_USERNAME = /^[^\0-\x1f\x7f:]+$/;

export interface RegistriesDeps {
  db: PlatformDb;
  secrets: SecretBox;
  /** PLATFORM_BUILD_REGISTRIES. */
  registries: readonly string[];
  lookup?: HostLookup;
}

const aad = (id: string) => `registry credential ${id}`;

/** The registry host as references name it (lowercased), or 400 saying why it is not one pulls may use. */
export function checkRegistryHost(registry: string, allowed: readonly string[]): string {
  const parsed = parseImageReference(`${registry}/x`);
  if (typeof parsed === "string" || parsed.registry.toLowerCase() !== registry.toLowerCase()) {
    throw new ApiError("VALIDATION_FAILED", "registry: a host name with an optional port, as image references name it (`ghcr.io`, `registry.example.com:5000`)");
  }
  const host = registry.toLowerCase();
  const refused = registryPullRefusal(host, allowed);
  if (refused) throw new ApiError("IMAGE_NOT_ALLOWED", `The registry ${refused}`);
  return host;
}

export function credentialView(row: CredentialRow): Static<typeof RegistryCredentialSchema> {
  return { id: row.id, registry: row.registry, username: row.username, workspaceId: row.workspaceId, createdAt: new Date(row.createdAt).toISOString() };
}

export class Registries {
  constructor(private readonly deps: RegistriesDeps) {}

  list(workspaceId: string): CredentialRow[] {
    return this.deps.db.select().from(registryCredentials).where(eq(registryCredentials.workspaceId, workspaceId)).orderBy(registryCredentials.createdAt).all();
  }

  get(workspaceId: string, id: string): CredentialRow {
    const row = this.deps.db.select().from(registryCredentials).where(and(eq(registryCredentials.id, id), eq(registryCredentials.workspaceId, workspaceId))).get();
    if (!row) throw new ApiError("NOT_FOUND", "Registry credentials not found");
    return row;
  }

  add(workspaceId: string, input: { registry: string; username: string; password: string }): CredentialRow {
    const registry = checkRegistryHost(input.registry, this.deps.registries);
    if (!PLAIN_USERNAME.test(input.username)) throw new ApiError("VALIDATION_FAILED", "username: no colon and no control characters");
    if (/[\0-\x1f\x7f]/.test(input.password)) throw new ApiError("VALIDATION_FAILED", "password: no control characters");
    const taken = this.deps.db.select({ id: registryCredentials.id }).from(registryCredentials)
      .where(and(eq(registryCredentials.workspaceId, workspaceId), eq(registryCredentials.registry, registry))).get();
    if (taken) throw new ApiError("REGISTRY_TAKEN", `The workspace has credentials for ${registry} already (${taken.id}): delete them first to replace them`);
    const id = newId("reg");
    const row = { id, workspaceId, registry, username: input.username, passwordEncrypted: this.deps.secrets.encrypt(input.password, aad(id)), createdAt: Date.now() };
    this.deps.db.insert(registryCredentials).values(row).run();
    return row;
  }

  delete(workspaceId: string, id: string): CredentialRow {
    const row = this.get(workspaceId, id);
    this.deps.db.delete(registryCredentials).where(eq(registryCredentials.id, row.id)).run();
    return row;
  }

  /** A real login to the registry, made by the engine (bounded by its call timeout). */
  async test(workspaceId: string, id: string, driver: DockerDriver): Promise<{ ok: boolean; message: string }> {
    const row = this.get(workspaceId, id);
    const refused = registryPullRefusal(row.registry, this.deps.registries) ?? (await registryAddressRefusal(row.registry, this.deps.lookup ?? lookupHost, this.deps.registries));
    if (refused) return { ok: false, message: `Not asked: the registry ${refused}` };
    const auth = this.authOf(row);
    try {
      await driver.checkRegistryLogin(auth);
      return { ok: true, message: `${row.registry} accepted the login of ${row.username}` };
    } catch (error) {
      if (error instanceof ApiError) throw error;
      return { ok: false, message: `${row.registry} refused the login of ${row.username}: ${registryMessage(error as Error, auth.password)}` };
    }
  }

  private authOf(row: CredentialRow): RegistryAuth {
    return { username: row.username, password: this.deps.secrets.decrypt(row.passwordEncrypted, aad(row.id)), serveraddress: row.registry };
  }

  /** The workspace's login for `registry`, for its own pulls only; undefined when it has none. */
  authFor(workspaceId: string, registry: string): RegistryAuth | undefined {
    const row = this.deps.db.select().from(registryCredentials)
      .where(and(eq(registryCredentials.workspaceId, workspaceId), eq(registryCredentials.registry, registry.toLowerCase()))).get();
    return row ? this.authOf(row) : undefined;
  }
}

/** The engine's reason, first line, cut short, never with the password in it. */
export function registryMessage(error: Error, password: string): string {
  const [first = ""] = error.message.replace(/^docker [^:]*failed: /, "").split("\n", 1);
  const clean = password ? first.split(password).join("****") : first;
  return clean.length > MAX_MESSAGE_LENGTH ? `${clean.slice(0, MAX_MESSAGE_LENGTH)}…` : clean;
}
