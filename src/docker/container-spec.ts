// What the platform asks of a container, and the pure translation into the engine's create
// options with the hardening every container gets: memory limit with equal swap, pids limit,
// a CPU limit, no-new-privileges, all capabilities dropped but the few an image needs, capped json-file
// logs, no privileged mode, no host mounts (named volumes only), never the Docker socket.
import type Docker from "dockerode";

export const LABEL_MANAGED = "platform.managed";
export const LABEL_WORKSPACE = "platform.workspace";
export const LABEL_APP = "platform.app";
export const LABEL_DATABASE = "platform.database";
export const LABEL_BUILD = "platform.build";
/** A digest of the env and limits an app container was made from: compared with the app's own at start. */
export const LABEL_SETTINGS = "platform.settings";

/** Capabilities an image may get back; the official database images need these to chown their data dir and drop to their user. */
export const ALLOWED_CAPABILITIES = ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER", "NET_BIND_SERVICE"] as const;
export type Capability = (typeof ALLOWED_CAPABILITIES)[number];

export const DEFAULT_PIDS_LIMIT = 512;
export const LOG_MAX_SIZE = "10m";
export const LOG_MAX_FILES = "3";

export interface ContainerSpec {
  name: string;
  image: string;
  /** argv, never a shell string: user text can't become shell syntax. Omit to use the image's CMD. */
  command?: string[];
  entrypoint?: string[];
  env?: Record<string, string>;
  labels: Record<string, string>;
  memoryMB: number;
  /** CPUs the container may use (fractions allowed, e.g. 0.5), as Docker's NanoCpus; omitted: no limit. */
  cpus?: number;
  pidsLimit?: number;
  capabilities?: Capability[];
  workingDir?: string;
  /** uid[:gid] the process runs as; omitted: the image's user. */
  user?: string;
  /** Namespaced kernel settings (net.*), e.g. letting a non-root app bind a port below 1024. */
  sysctls?: Record<string, string>;
  /** Workspace network and the names other containers on it reach this one by. */
  network?: { name: string; aliases: string[] };
  /** Container port published on the host, bound to one address (e.g. 127.0.0.1). */
  publish?: { containerPort: number; hostIp: string; hostPort?: number };
  /** Named volumes only: host paths are never mounted. */
  volumes?: { volumeName: string; containerPath: string }[];
  restartPolicy?: "no" | "on-failure" | "unless-stopped";
  /** Run a tiny init as PID 1: it forwards SIGTERM (an app as PID 1 ignores it) and reaps zombies. */
  init?: boolean;
  /** false: the engine keeps no log (output is read by attaching, e.g. a build's); spares it encoding a flood. */
  keepLogs?: boolean;
}

const CONTAINER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Only the network namespace's own settings: they change nothing outside the container. */
const NETWORK_SYSCTL = /^net\.ipv4\.[a-z0-9_.]+$/;

export function toCreateOptions(spec: ContainerSpec): Docker.ContainerCreateOptions {
  if (!CONTAINER_NAME.test(spec.name)) throw new Error(`invalid container name ${JSON.stringify(spec.name)}`);
  if (!spec.labels[LABEL_MANAGED]) throw new Error("every container needs the platform.managed label");
  for (const capability of spec.capabilities ?? []) {
    if (!ALLOWED_CAPABILITIES.includes(capability)) throw new Error(`capability ${capability} is not allowed`);
  }
  const env = Object.entries(spec.env ?? {}).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new Error(`invalid environment variable name ${JSON.stringify(name)}`);
    return `${name}=${value}`;
  });
  const memoryBytes = Math.round(spec.memoryMB * 1024 * 1024);
  for (const name of Object.keys(spec.sysctls ?? {})) {
    if (!NETWORK_SYSCTL.test(name)) throw new Error(`sysctl ${name} is not allowed`);
  }
  const port = spec.publish ? `${spec.publish.containerPort}/tcp` : undefined;
  return {
    name: spec.name,
    Image: spec.image,
    Cmd: spec.command,
    Entrypoint: spec.entrypoint,
    Env: env,
    Labels: spec.labels,
    WorkingDir: spec.workingDir,
    User: spec.user,
    ExposedPorts: port ? { [port]: {} } : undefined,
    HostConfig: {
      Memory: memoryBytes,
      MemorySwap: memoryBytes,
      NanoCpus: spec.cpus === undefined ? undefined : nanoCpus(spec.cpus),
      PidsLimit: spec.pidsLimit ?? DEFAULT_PIDS_LIMIT,
      SecurityOpt: ["no-new-privileges:true"],
      CapDrop: ["ALL"],
      CapAdd: spec.capabilities ?? [],
      Privileged: false,
      LogConfig:
        spec.keepLogs === false
          ? { Type: "none", Config: {} }
          : { Type: "json-file", Config: { "max-size": LOG_MAX_SIZE, "max-file": LOG_MAX_FILES } },
      Mounts: (spec.volumes ?? []).map((volume) => ({ Type: "volume" as const, Source: volume.volumeName, Target: volume.containerPath })),
      PortBindings: port
        ? { [port]: [{ HostIp: spec.publish!.hostIp, HostPort: spec.publish!.hostPort ? String(spec.publish!.hostPort) : "" }] }
        : undefined,
      RestartPolicy: { Name: spec.restartPolicy ?? "no" },
      Init: spec.init ?? false,
      Sysctls: spec.sysctls,
      NetworkMode: spec.network?.name,
    },
    NetworkingConfig: spec.network
      ? { EndpointsConfig: { [spec.network.name]: { Aliases: spec.network.aliases } } }
      : undefined,
  };
}

/** Docker's unit for a CPU limit: billionths of a CPU. */
export function nanoCpus(cpus: number): number {
  if (!Number.isFinite(cpus) || cpus <= 0) throw new Error(`invalid cpus ${cpus}`);
  return Math.round(cpus * 1e9);
}
