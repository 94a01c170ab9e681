// What the app page reads from /api/apps/{id} and its sub-routes (see src/apps/model.ts).

export interface CertificateStatus {
  status: string;
  source: string | null;
  expiresAt: string | null;
  lastError: string | null;
}

export interface RateLimits {
  clientBurst: number | null;
  clientRps: number | null;
  hostBurst: number | null;
  hostRps: number | null;
}

/** An app's health check (src/apps/health/settings.ts); `path` null: a TCP connect to its port. */
export interface HealthCheck {
  path: string | null;
  intervalSeconds: number;
  timeoutSeconds: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
  startPeriodSeconds: number;
}

export interface HealthProbe {
  status: "pass" | "fail";
  at: string;
  httpStatus: number | null;
  error: string | null;
  latencyMs: number;
}

export interface App {
  id: string;
  name: string;
  runtime: "node" | "bun" | "python" | "image";
  /** Image apps: the reference each deploy pulls; null for apps built from source. */
  image: string | null;
  /** Image apps: the user the container runs as; null: the image's own. */
  user: string | null;
  status: string;
  statusReason: string | null;
  memoryMB: number;
  cpus: number;
  exposePort: number | null;
  servingPort: number | null;
  subdomain: string | null;
  url: string | null;
  startupCommand: string;
  autoRestart: boolean;
  autoDeploy: boolean;
  builder: "auto" | "dockerfile";
  repository: { owner: string; name: string; branch: string } | null;
  rateLimits: RateLimits | null;
  effectiveRateLimits: Record<keyof RateLimits, number>;
  httpsRedirect: boolean;
  hsts: boolean;
  certificate: CertificateStatus | null;
  currentBuildId: string | null;
  healthCheck: HealthCheck;
  /** The last probe of its health check; null before the first since the platform started. */
  health: HealthProbe | null;
  /** Volumes mounted in its containers; a list change goes through its settings. */
  volumes: { id: string; name: string; mountPath: string; sizeBytes: number | null }[];
  releaseStrategy: "start-first" | "stop-first";
  filesChangedSinceBuild: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Build {
  id: string;
  status: string;
  queuePosition: number | null;
  trigger: string;
  commitSha: string | null;
  commitMessage: string | null;
  /** Image apps: the digest the pull got (`repo@sha256:…`). */
  imageDigest: string | null;
  rollbackOf: string | null;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
}

/** What every tab gets: the app as last read, and a way to read it again after a change. */
export interface TabProps {
  app: App;
  reloadApp(): Promise<void>;
  rest: string[];
}
