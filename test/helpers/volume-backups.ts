// Helpers for volume backup tests: a volume made the way the volumes domain makes one (its row in
// the platform's database, a labelled engine volume), a tree of files written into it, and an
// inventory of what it holds (paths, types, modes, owners, link targets, mtimes, content hashes),
// all by the `docker` CLI, an independent witness of what the platform did.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { dockerCli } from "./docker";
import { poll } from "./databases";
import type { TestServer } from "./server";
import type { AuthenticatedRoute, Tenant } from "./auth-matrix";

const IMAGE = "platform-test/base:latest";

export interface TestVolume {
  id: string;
  name: string;
  engineVolumeName: string;
}

function platformDb(server: TestServer): Database {
  const db = new Database(join(server.dataDir, "platform.sqlite"));
  db.run("PRAGMA busy_timeout = 5000");
  return db;
}

/** A volume row of the workspace (mounted by `appId`, else detached), and its labelled engine volume. */
export async function createTestVolume(server: TestServer, workspaceId: string, name: string, appId: string | null = null): Promise<TestVolume> {
  const id = `vol_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
  const engineVolumeName = `platform-volume-${id}`;
  await dockerCli("volume", "create", "--label", "platform.managed=true", "--label", `platform.workspace=${workspaceId}`, "--label", `platform.volume=${id}`, engineVolumeName);
  const db = platformDb(server);
  try {
    const now = Date.now();
    db.run(
      "INSERT INTO volumes (id, workspace_id, name, app_id, mount_path, machine_id, engine_volume_name, size_bytes, size_measured_at, created_at, updated_at) VALUES (?, ?, ?, ?, '/data', 'local', ?, NULL, NULL, ?, ?)",
      [id, workspaceId, name, appId, engineVolumeName, now, now],
    );
  } finally {
    db.close();
  }
  return { id, name, engineVolumeName };
}

/** A stopped app's row, never built: enough to mount a volume and be deleted. */
export function createStoppedApp(server: TestServer, workspaceId: string, name: string): string {
  const id = `app_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
  const db = platformDb(server);
  try {
    db.run(
      "INSERT INTO apps (id, workspace_id, name, runtime, status, memory_mb, startup_command, auto_restart, auto_deploy, machine_id, created_at, updated_at) VALUES (?, ?, ?, 'node', 'stopped', 64, 'auto', 1, 0, 'local', ?, ?)",
      [id, workspaceId, name, Date.now(), Date.now()],
    );
  } finally {
    db.close();
  }
  return id;
}

/** The engine volume the platform's record says holds the volume's content now. */
export function engineVolumeOf(server: TestServer, volumeId: string): string {
  const db = platformDb(server);
  try {
    return db.query<{ engine_volume_name: string }, [string]>("SELECT engine_volume_name FROM volumes WHERE id = ?").get(volumeId)!.engine_volume_name;
  } finally {
    db.close();
  }
}

/** Runs a shell script as root in a throwaway container with the engine volume at /data. */
export function inVolume(engineVolumeName: string, script: string): Promise<string> {
  return dockerCli("run", "--rm", "--network", "none", "-v", `${engineVolumeName}:/data`, IMAGE, "sh", "-ec", script);
}

/** Nested folders, an empty file, random bytes, symlinks (one dangling), a hard link, odd modes and owners, a name with spaces and accents. */
export function writeTree(engineVolumeName: string): Promise<string> {
  return inVolume(
    engineVolumeName,
    `cd /data
     mkdir -p a/b/c "with space"
     printf 'hello\\n' > a/b/c/hello.txt
     : > empty
     head -c 300000 /dev/urandom > a/random.bin
     printf 'x' > "with space/ünïcode file"
     ln -s a/b/c/hello.txt link
     ln -s no-such-file dangling
     ln a/b/c/hello.txt hardlink
     chmod 0741 a/b/c/hello.txt; chmod 0600 a/random.bin; chmod 2775 "with space"; chmod 1777 a/b
     chown 1000:1000 a/random.bin; chown 123:456 empty`,
  );
}

/** Every entry: path, type, mode, owner, link target, mtime of files (to the second: the engine's tar keeps no more); then each file's SHA-256. */
export function inventory(engineVolumeName: string): Promise<string> {
  return inVolume(
    engineVolumeName,
    `cd /data
     find . -printf '%p|%y|%m|%U:%G|%l\\n' | LC_ALL=C sort
     find . -type f -printf '%p|%Ts\\n' | LC_ALL=C sort
     find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum`,
  );
}

/** GETs the backup until it is no longer `running` (or its verify until it is not), and answers it. */
export function waitForVolumeBackup(server: TestServer, key: string, volumeId: string, backupId: string, field: "status" | "verification" = "status"): Promise<any> {
  return poll(`volume backup ${backupId}`, 60_000, async () => {
    const { status, body } = await server.request("GET", `/api/volumes/${volumeId}/backups/${backupId}`, { key });
    if (status !== 200) throw new Error(`GET backup answered ${status}: ${JSON.stringify(body)}`);
    const done = field === "status" ? body.backup.status !== "running" : body.backup.verification?.status !== "running";
    return done ? body.backup : undefined;
  });
}

export async function completedVolumeBackup(server: TestServer, key: string, volumeId: string): Promise<any> {
  const started = await server.request("POST", `/api/volumes/${volumeId}/backups`, { key });
  if (started.status !== 202) throw new Error(`POST backup answered ${started.status}: ${JSON.stringify(started.body)}`);
  const backup = await waitForVolumeBackup(server, key, volumeId, started.body.backup.id);
  if (backup.status !== "completed") throw new Error(`the backup failed: ${backup.error}`);
  return backup;
}

export function waitForRestore(server: TestServer, key: string, volumeId: string, restoreId: string): Promise<any> {
  return poll(`volume restore ${restoreId}`, 90_000, async () => {
    const { body } = await server.request("GET", `/api/volumes/${volumeId}/restores/${restoreId}`, { key });
    return ["succeeded", "failed"].includes(body.restore?.status) ? body.restore : undefined;
  });
}

/** Every engine volume of the volume (its current one, restores' new and old ones), gone. */
export async function removeEngineVolumes(volumeId: string) {
  const names = (await dockerCli("volume", "ls", "-q", "--filter", `label=platform.volume=${volumeId}`)).split("\n").filter(Boolean);
  const containers = (await dockerCli("ps", "-aq", "--filter", `label=platform.volume=${volumeId}`)).split("\n").filter(Boolean);
  if (containers.length) await dockerCli("rm", "-f", ...containers);
  if (names.length) await dockerCli("volume", "rm", "-f", ...names);
}

/** Whether the engine has a volume of that name. */
export async function engineVolumeExists(name: string): Promise<boolean> {
  return (await Bun.spawn(["docker", "volume", "inspect", name], { stdout: "ignore", stderr: "ignore" }).exited) === 0;
}

// ---- the auth and permission matrices -------------------------------------------------------

const matrixVolumes: string[] = [];
let matrixCount = 0;

/** A volume of `owner` holding one small file, for routes with a volume id. */
const volumeOf = async (server: TestServer, owner: Tenant) => {
  const volume = await createTestVolume(server, owner.workspaceId, `matrix-${++matrixCount}-${Date.now().toString(36)}`);
  matrixVolumes.push(volume.id);
  await inVolume(volume.engineVolumeName, "echo matrix > /data/file");
  return { volumeId: volume.id };
};

const backupOf = async (server: TestServer, owner: Tenant) => {
  const { volumeId } = await volumeOf(server, owner);
  const backup = await completedVolumeBackup(server, owner.key, volumeId);
  return { volumeId, backupId: backup.id as string };
};

const restoreOf = async (server: TestServer, owner: Tenant) => {
  const { volumeId, backupId } = await backupOf(server, owner);
  const started = await server.request("POST", `/api/volumes/${volumeId}/restore`, { key: owner.key, body: { backupId } });
  if (started.status !== 202) throw new Error(`could not restore for the matrix: ${JSON.stringify(started.body)}`);
  return { volumeId, restoreId: started.body.restore.id as string };
};

export const VOLUME_BACKUP_ROUTES: AuthenticatedRoute[] = [
  { method: "POST", path: "/api/volumes/:volumeId/backups", resource: volumeOf },
  { method: "GET", path: "/api/volumes/:volumeId/backups", resource: volumeOf },
  { method: "GET", path: "/api/volumes/:volumeId/backups/:backupId", resource: backupOf },
  { method: "DELETE", path: "/api/volumes/:volumeId/backups/:backupId", resource: backupOf },
  { method: "GET", path: "/api/volumes/:volumeId/backups/:backupId/download", resource: backupOf },
  { method: "POST", path: "/api/volumes/:volumeId/backups/:backupId/verify", resource: backupOf },
  { method: "POST", path: "/api/volumes/:volumeId/restore", body: (params: Record<string, string>) => ({ backupId: params.backupId }), resource: backupOf },
  { method: "GET", path: "/api/volumes/:volumeId/restores", resource: volumeOf },
  { method: "GET", path: "/api/volumes/:volumeId/restores/:restoreId", resource: restoreOf },
  { method: "GET", path: "/api/volumes/:volumeId/backup-schedule", resource: volumeOf },
  // Nightly: nothing runs while the matrix does.
  { method: "PUT", path: "/api/volumes/:volumeId/backup-schedule", body: { cron: "0 3 * * *" }, resource: volumeOf },
  { method: "DELETE", path: "/api/volumes/:volumeId/backup-schedule", resource: volumeOf },
];

/** The engine volumes (and any helper container) of the matrices' volumes, gone; run after their server stopped. */
export async function removeMatrixVolumes() {
  for (const id of matrixVolumes.splice(0)) await removeEngineVolumes(id);
}
