// An app as the API shows it: its row, with what is derived from the platform's settings (its URL,
// its CPUs and rate limits where it has none of its own, its certificate).
import type { Static } from "@sinclair/typebox";
import type { Config } from "../config";
import type { CertificateStatus } from "../certificates/service";
import type { AppRow } from "./deployer";
import { AppSchema, type AppStatus, type BuilderSetting } from "./model";
import { healthCheckOf, probeView, type HealthProbe } from "./health/settings";
import { effectiveRateLimits, rateLimitOverridesOf, rateLimitsView } from "./rate-limits";

/** Where the public proxy serves a host, and with which certificate (AppsService). */
export interface PublicAddresses {
  urlOf(host: string): string;
  certificateOf(host: string): CertificateStatus;
}

/** Without what src/volumes adds (AppsService.publicApp). */
export function appView(
  app: AppRow,
  config: Pick<Config, "defaultCpus" | "domain" | "proxyRateLimits" | "git">,
  addresses: PublicAddresses,
  lastProbe: HealthProbe | null = null,
): Omit<Static<typeof AppSchema>, "volumes" | "releaseStrategy"> {
  const host = app.subdomain ? `${app.subdomain}.${config.domain}` : null;
  return {
    id: app.id,
    name: app.name,
    runtime: app.runtime,
    image: app.image,
    user: app.containerUser,
    status: app.status as AppStatus,
    statusReason: app.statusReason,
    memoryMB: app.memoryMB,
    cpus: app.cpus ?? config.defaultCpus,
    exposePort: app.exposePort,
    servingPort: app.containerId ? app.servingPort : null,
    subdomain: app.subdomain,
    url: host === null ? null : addresses.urlOf(host),
    startupCommand: app.startupCommand,
    autoRestart: app.autoRestart,
    autoDeploy: app.autoDeploy,
    builder: app.builder as BuilderSetting,
    repository: repositoryView(app, config.git.baseUrl),
    rateLimits: rateLimitOverridesOf(app),
    effectiveRateLimits: rateLimitsView(effectiveRateLimits(app, config.proxyRateLimits)),
    httpsRedirect: app.httpsRedirect,
    hsts: app.hsts,
    certificate: host === null ? null : addresses.certificateOf(host),
    machineId: app.machineId,
    currentBuildId: app.currentBuildId,
    healthCheck: healthCheckOf(app),
    health: lastProbe && probeView(lastProbe),
    filesChangedSinceBuild: app.filesChangedAt !== null,
    workspaceId: app.workspaceId,
    createdAt: new Date(app.createdAt).toISOString(),
    updatedAt: new Date(app.updatedAt).toISOString(),
  };
}

function repositoryView(app: AppRow, baseUrl: string): Static<typeof AppSchema>["repository"] {
  if (app.repoOwner === null || app.repoName === null || app.repoBranch === null) return null;
  return {
    id: app.repoId ?? "",
    owner: app.repoOwner,
    name: app.repoName,
    branch: app.repoBranch,
    path: app.repoPath ?? "",
    repoHostInstallationId: app.repoInstallationId,
    hasAccessToken: app.repoTokenEncrypted !== null,
    url: `${baseUrl}/${app.repoOwner}/${app.repoName}.git`,
  };
}
