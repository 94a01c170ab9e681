// The app rows a deploy writes: a new app, or a new release of the workspace's app with that name
// (ZIP and repository deploys alike), with the name, subdomain and quota checks they share, and
// the build entries that follow one.
import { and, eq, ne } from "drizzle-orm";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { apps, builds, databases } from "../db/schema";
import { newId, randomBase62 } from "../crypto/tokens";
import { ApiError } from "../http/errors";
import type { Runtime } from "../config";
import { assertWithinQuota } from "../quotas/limits";
import { workspaceUsage } from "../quotas/usage";
import { mergeEnvVars } from "./env-vars";
import { DEFAULT_EXPOSE_PORT, type BuilderSetting } from "./model";
import type { AppRow, AppsContext } from "./deployer";
import type { HealthCheck } from "./health/settings";
import type { VolumeMount } from "../volumes/validation";
import type { VolumePlan, Volumes } from "../volumes/service";
import type { ReleaseStrategy } from "../volumes/model";

/** The fields of a deploy form (./deploy-form.ts parseDeployFields). */
export interface DeployInput {
  name: string;
  runtime: Runtime | "image";
  memoryMB: number;
  cpus?: number;
  startupCommand?: string;
  envVars: Record<string, string>;
  exposePort?: number;
  subdomain?: string;
  autoRestart?: boolean;
  builder?: BuilderSetting;
  healthCheck?: HealthCheck;
  /** The app's whole volume list; absent: unchanged. */
  volumes?: VolumeMount[];
  releaseStrategy?: ReleaseStrategy;
}

export class AppRecords {
  constructor(
    private readonly ctx: AppsContext,
    private readonly volumes: Volumes,
  ) {}

  /** The deploy's volume list checked against the app of that name (or a new one on `machineId`); undefined when it lists none. */
  planVolumes(workspaceId: string, input: DeployInput, machineId: string): VolumePlan | undefined {
    if (input.volumes === undefined) return undefined;
    const existing = this.findByName(workspaceId, input.name);
    return this.volumes.plan({ workspaceId, appId: existing?.id, machineId: existing?.machineId ?? machineId, runtime: existing?.runtime ?? input.runtime }, input.volumes);
  }

  findByName(workspaceId: string, name: string): AppRow | undefined {
    return this.ctx.db.select().from(apps).where(and(eq(apps.workspaceId, workspaceId), eq(apps.name, name))).get();
  }

  /** App and database names share the workspace network's DNS: one name, one thing. */
  assertNameFree(workspaceId: string, name: string) {
    const app = this.findByName(workspaceId, name);
    const database = this.ctx.db.select({ id: databases.id }).from(databases).where(and(eq(databases.workspaceId, workspaceId), eq(databases.name, name))).get();
    if (app || database) throw new ApiError("NAME_TAKEN", `'${name}' is already the name of ${app ? "an app" : "a database"} in this workspace`);
  }

  subdomainTaken(subdomain: string, exceptAppId = "") {
    return this.ctx.db.select({ id: apps.id }).from(apps).where(and(eq(apps.subdomain, subdomain), ne(apps.id, exceptAppId))).get() !== undefined;
  }

  private freeSubdomain(name: string): string {
    if (!this.subdomainTaken(name)) return name;
    for (;;) {
      const candidate = `${name.slice(0, 57)}-${randomBase62(5).toLowerCase()}`;
      if (!this.subdomainTaken(candidate)) return candidate;
    }
  }

  /**
   * Checks and writes, with nothing awaited in between (no other request slips in): the app named
   * `input.name` is updated with the input and `extra`, or made. `moveRoute` is told when an
   * existing app's subdomain changes. Answers the app's id and whether it existed.
   */
  accept(
    workspaceId: string,
    input: DeployInput,
    machineId: string,
    extra: Partial<AppRow>,
    moveRoute: (app: AppRow, subdomain: string) => void,
  ): { appId: string; existing: AppRow | undefined } {
    const existing = this.findByName(workspaceId, input.name);
    if (!existing) this.assertNameFree(workspaceId, input.name);
    if (existing && (existing.runtime === "image") !== (input.runtime === "image")) {
      const kind = existing.runtime === "image" ? "deployed from an image" : "built from source";
      throw new ApiError("NAME_TAKEN", `'${input.name}' is an app ${kind}: deploy this one under another name`);
    }
    const usage = workspaceUsage(this.ctx.db, workspaceId);
    const quotas = this.ctx.config.quotas;
    if (!existing) assertWithinQuota("apps", usage.apps, 1, quotas.apps);
    assertWithinQuota("memoryMB", usage.memoryMB, input.memoryMB - (existing?.memoryMB ?? 0), quotas.memoryMB);
    if (input.subdomain && this.subdomainTaken(input.subdomain, existing?.id)) {
      throw new ApiError("SUBDOMAIN_TAKEN", `Subdomain '${input.subdomain}' is taken`);
    }
    const volumePlan = this.planVolumes(workspaceId, input, machineId);
    const appId = existing?.id ?? newId("app");
    const now = Date.now();
    if (existing) {
      this.ctx.db
        .update(apps)
        .set({
          runtime: input.runtime,
          memoryMB: input.memoryMB,
          ...(input.cpus !== undefined && { cpus: input.cpus }),
          ...(input.startupCommand !== undefined && { startupCommand: input.startupCommand }),
          ...(input.exposePort !== undefined && { exposePort: input.exposePort }),
          ...(input.subdomain !== undefined && { subdomain: input.subdomain }),
          ...(input.autoRestart !== undefined && { autoRestart: input.autoRestart }),
          ...(input.builder !== undefined && { builder: input.builder }),
          ...(input.healthCheck !== undefined && { healthCheck: input.healthCheck }),
          ...(input.releaseStrategy !== undefined && { releaseStrategy: input.releaseStrategy }),
          ...extra,
          updatedAt: now,
        })
        .where(eq(apps.id, appId))
        .run();
      if (input.subdomain !== undefined && input.subdomain !== existing.subdomain) moveRoute(existing, input.subdomain);
    } else {
      this.ctx.db
        .insert(apps)
        .values({
          id: appId,
          workspaceId,
          name: input.name,
          runtime: input.runtime,
          status: "building",
          memoryMB: input.memoryMB,
          cpus: input.cpus ?? null,
          exposePort: input.exposePort ?? DEFAULT_EXPOSE_PORT,
          subdomain: input.subdomain ?? this.freeSubdomain(input.name),
          startupCommand: input.startupCommand ?? "auto",
          autoRestart: input.autoRestart ?? true,
          autoDeploy: false,
          builder: input.builder ?? "auto",
          healthCheck: input.healthCheck ?? null,
          releaseStrategy: input.releaseStrategy ?? null,
          machineId,
          ...extra,
          createdAt: now,
          updatedAt: now,
        })
        .run();
    }
    mergeEnvVars(this.ctx.db, this.ctx.secrets, appId, input.envVars);
    volumePlan?.apply(appId);
    return { appId, existing };
  }

  /** A queued build entry, its log followable at once (not only once it runs). */
  /** An image app deployed without `exposePort`: its first pull chooses it from the image. */
  clearExposePort(appId: string) {
    this.ctx.db.update(apps).set({ exposePort: null }).where(eq(apps.id, appId)).run();
  }

  newBuild(appId: string, trigger: string, extra: Partial<typeof builds.$inferInsert> = {}): string {
    const id = newId("bld");
    this.ctx.db.insert(builds).values({ id, appId, status: "queued", trigger, startedAt: Date.now(), ...extra }).run();
    mkdirSync(dirname(this.ctx.storage.buildLogFile(appId, id)), { recursive: true, mode: 0o700 });
    this.ctx.buildLogs.open(id);
    return id;
  }
}
