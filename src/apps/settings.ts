// An app's settings change: what may change, the row it leads to, and whether the app rebuilds or restarts.
import { eq } from "drizzle-orm";
import { builds } from "../db/schema";
import type { Runtime } from "../config";
import { checkStartupCommand, invalid } from "./deploy-form";
import type { AppRow, AppsContext, Deployer } from "./deployer";
import type { AppRecords } from "./app-records";
import { DEFAULT_EXPOSE_PORT, type BuilderSetting } from "./model";
import { containerUserField } from "./images/container";
import { healthCheckAfter, healthCheckOf } from "./health/settings";
import { rateLimitColumnsAfter, type RateLimitsInput } from "./rate-limits";
import type { VolumeMount } from "../volumes/validation";
import type { ReleaseStrategy } from "../volumes/model";

export interface SettingsInput {
  name?: string;
  runtime?: Runtime;
  memoryMB?: number;
  cpus?: number | null;
  startupCommand?: string;
  exposePort?: number | null;
  subdomain?: string | null;
  autoRestart?: boolean;
  autoDeploy?: boolean;
  builder?: BuilderSetting;
  rateLimits?: RateLimitsInput;
  httpsRedirect?: boolean;
  hsts?: boolean;
  /** Checked by healthCheckAfter: an object of some of the fields, null, or (in a form) JSON text. */
  healthCheck?: unknown;
  volumes?: VolumeMount[];
  releaseStrategy?: ReleaseStrategy | null;
  /** Image apps: the user the container runs as; "" or null: the image's own USER. */
  user?: string | number | null;
}

/** 400 for a change the app's kind does not allow. */
export function checkSettingsInput(app: AppRow, input: SettingsInput) {
  if (input.startupCommand !== undefined) checkStartupCommand(input.startupCommand);
  if (app.runtime === "image" && (input.runtime !== undefined || input.builder !== undefined)) {
    invalid(input.runtime !== undefined ? "runtime" : "builder", "an app deployed from an image is not built from source");
  }
  if (input.user !== undefined && app.runtime !== "image") invalid("user", "only an app deployed from an image runs as a user of its own");
}

/** The app's settings columns once `input` is applied. */
export function settingsAfter(app: AppRow, input: SettingsInput) {
  return {
    name: input.name ?? app.name,
    runtime: input.runtime ?? app.runtime,
    memoryMB: input.memoryMB ?? app.memoryMB,
    cpus: input.cpus === undefined ? app.cpus : input.cpus,
    startupCommand: input.startupCommand ?? app.startupCommand,
    exposePort: input.exposePort === undefined ? app.exposePort : (input.exposePort ?? DEFAULT_EXPOSE_PORT),
    subdomain: input.subdomain === undefined ? app.subdomain : input.subdomain,
    autoRestart: input.autoRestart ?? app.autoRestart,
    autoDeploy: input.autoDeploy ?? app.autoDeploy,
    builder: input.builder ?? app.builder,
    ...rateLimitColumnsAfter(app, input.rateLimits),
    httpsRedirect: input.httpsRedirect ?? app.httpsRedirect,
    hsts: input.hsts ?? app.hsts,
    // Read by the next release and the next probe: nothing restarts.
    healthCheck: input.healthCheck === undefined ? app.healthCheck : healthCheckAfter(healthCheckOf(app), input.healthCheck),
    releaseStrategy: input.releaseStrategy === undefined ? app.releaseStrategy : input.releaseStrategy,
    containerUser: input.user === undefined ? app.containerUser : containerUserField(input.user),
  };
}

/** Whether the change needs a new build, and whether the running container must be replaced. */
export function settingsRestart(app: AppRow, next: ReturnType<typeof settingsAfter>, mountsChanged: boolean) {
  // An image app's command is read when its container starts: a rebuild would pull the tag again (and undo a rollback).
  const commandChanged = next.startupCommand !== app.startupCommand;
  const rebuild = next.runtime !== app.runtime || (commandChanged && app.runtime !== "image") || next.builder !== app.builder;
  const restart = rebuild || commandChanged || next.containerUser !== app.containerUser || next.memoryMB !== app.memoryMB || next.cpus !== app.cpus || next.exposePort !== app.exposePort || mountsChanged;
  return { rebuild, restart };
}

/** After a change the running container must pick up: a new release (or build), zero-downtime. */
export function restartForChange(ctx: AppsContext, deployer: Deployer, records: AppRecords, app: AppRow, rebuildTrigger: string | null, restart: boolean) {
  const serving = app.containerId !== null && app.status !== "stopped" && app.status !== "stopping";
  if (!restart || (!serving && app.status !== "failed")) return { restarted: false, buildId: null };
  if (rebuildTrigger || !app.currentBuildId) {
    const buildId = records.newBuild(app.id, rebuildTrigger ?? "settings");
    deployer.schedule(app.id, (signal) => deployer.buildAndRelease(app.id, buildId, undefined, signal));
    return { restarted: true, buildId };
  }
  const buildId = app.currentBuildId;
  const image = ctx.db.select().from(builds).where(eq(builds.id, buildId)).get()?.image;
  if (!image) return { restarted: false, buildId: null };
  deployer.schedule(app.id, (signal) => deployer.release(app.id, buildId, image, undefined, signal));
  return { restarted: true, buildId: null };
}
