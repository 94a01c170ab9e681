// The platform killed (SIGKILL) in the middle of a volume restore, once the backup is extracted
// into the new engine volume and before the volume is switched to it, then started again on the
// same data dir: the restore is failed saying so, the volume still holds its old content in its old
// engine volume, and the half-made one (and the helper container) is gone. Also a backup killed
// once its file was whole and recorded: completed at the next start.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { TestServer } from "../../helpers/server";
import { dockerCli } from "../../helpers/docker";
import { poll } from "../../helpers/databases";
import { sha256Hex } from "../../helpers/backups";
import {
  completedVolumeBackup,
  createTestVolume,
  engineVolumeExists,
  engineVolumeOf,
  inVolume,
  inventory,
  removeEngineVolumes,
  waitForRestore,
  writeTree,
  type TestVolume,
} from "../../helpers/volume-backups";

// Set here too: in a run of several files the preload's timeout does not reach every file's tests.
setDefaultTimeout(120_000);

let server: TestServer;
let key: string;
let workspaceId: string;
let volume: TestVolume | undefined;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_TEST_PAUSE_AT: "volume-restore.extracted" });
  ({ key, workspaceId } = await server.createKey("volume restore crash"));
});

afterAll(async () => {
  await server?.stop();
  if (volume) await removeEngineVolumes(volume.id);
});

test("a restore killed after extracting, before the swap, leaves the old content in use and the half-made volume removed at start", async () => {
  volume = await createTestVolume(server, workspaceId, "crash");
  await writeTree(volume.engineVolumeName);
  const backup = await completedVolumeBackup(server, key, volume.id);
  await inVolume(volume.engineVolumeName, "cd /data; printf 'written after the backup' > a/b/c/hello.txt; touch after-backup");
  const old = await inventory(volume.engineVolumeName);

  const restoring = await server.request("POST", `/api/volumes/${volume.id}/restore`, { key, body: { backupId: backup.id } });
  expect(restoring.status).toBe(202);
  await poll("the restore to reach its pause", 60_000, async () => (server.output.includes("test pause at volume-restore.extracted") ? true : undefined));
  const halfMade = `platform-volume-${volume.id}-${restoring.body.restore.id}`;
  expect(await engineVolumeExists(halfMade)).toBe(true);

  await server.stop("SIGKILL");
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  await server.boot();

  const restore = await waitForRestore(server, key, volume.id, restoring.body.restore.id);
  expect(restore.status).toBe("failed");
  expect(restore.error).toMatch(/interrupted.*keeps its old content/);
  expect(engineVolumeOf(server, volume.id)).toBe(volume.engineVolumeName);
  expect(await inventory(volume.engineVolumeName)).toBe(old);
  expect(await engineVolumeExists(halfMade)).toBe(false);
  expect((await dockerCli("ps", "-aq", "--filter", `label=platform.volume=${volume.id}`)).trim()).toBe("");

  // Nothing holds the volume afterwards: a new restore goes through.
  const again = await server.request("POST", `/api/volumes/${volume.id}/restore`, { key, body: { backupId: backup.id } });
  expect(again.status).toBe(202);
  expect((await waitForRestore(server, key, volume.id, again.body.restore.id)).status).toBe("succeeded");
  expect(await inventory(engineVolumeOf(server, volume.id))).not.toBe(old);
});

test("a backup killed once its file is whole and recorded, before it is completed, is completed at the next start, its file the one recorded", async () => {
  await server.stop();
  server.env.PLATFORM_TEST_PAUSE_AT = "volume-backup.placed";
  await server.boot();
  const placed = volume ?? (volume = await createTestVolume(server, workspaceId, "crash"));
  const started = await server.request("POST", `/api/volumes/${placed.id}/backups`, { key });
  expect(started.status).toBe(202);
  await poll("the backup to reach its pause", 60_000, async () => (server.output.includes("test pause at volume-backup.placed") ? true : undefined));
  await server.stop("SIGKILL");
  delete server.env.PLATFORM_TEST_PAUSE_AT;
  await server.boot();
  const completed = await poll("the backup to be settled", 30_000, async () => {
    const { body } = await server.request("GET", `/api/volumes/${placed.id}/backups/${started.body.backup.id}`, { key });
    return body.backup.status === "running" ? undefined : body.backup;
  });
  expect(completed).toMatchObject({ status: "completed", error: null });
  const download = await fetch(`${server.baseUrl}/api/volumes/${placed.id}/backups/${completed.id}/download`, { headers: { authorization: `Bearer ${key}` } });
  expect(sha256Hex(new Uint8Array(await download.arrayBuffer()))).toBe(completed.sha256);
});
