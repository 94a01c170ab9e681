// A volume deleted on purpose (DELETE /api/volumes/{id}, or its app deleted with deleteVolumes=true)
// takes its backups with it: their rows, files and S3 copies; and a volume whose backup or restore
// is running is not deleted (409 BACKUP_IN_PROGRESS / RESTORE_IN_PROGRESS), nor is its app.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { TestS3 } from "../../helpers/s3";
import { poll } from "../../helpers/databases";
import { completedVolumeBackup, createStoppedApp, createTestVolume, engineVolumeExists, removeEngineVolumes, writeTree, type TestVolume } from "../../helpers/volume-backups";

setDefaultTimeout(120_000);

const PREFIX = "volume-delete-test/";
let s3: TestS3;
let server: TestServer;
let key: string;
let workspaceId: string;
const made: TestVolume[] = [];

beforeAll(async () => {
  s3 = await TestS3.start();
  server = await TestServer.start(s3.settings({ prefix: PREFIX }));
  ({ key, workspaceId } = await server.createKey("volume delete"));
});

afterAll(async () => {
  await server?.stop("SIGKILL");
  for (const volume of made) await removeEngineVolumes(volume.id);
  await s3?.stop();
});

async function volumeWithBackup(name: string, appId: string | null = null) {
  const volume = await createTestVolume(server, workspaceId, name, appId);
  made.push(volume);
  await writeTree(volume.engineVolumeName);
  const backup = await completedVolumeBackup(server, key, volume.id);
  const file = join(server.dataDir, "backups", volume.id, `${backup.id}.tar.gz`);
  const objectKey = `${PREFIX}${volume.id}/${backup.id}.tar.gz`;
  expect(existsSync(file)).toBe(true);
  expect(await s3.client().file(objectKey).exists()).toBe(true);
  return { volume, backup, file, objectKey };
}

async function expectGone({ volume, file, objectKey }: Awaited<ReturnType<typeof volumeWithBackup>>) {
  expect((await server.request("GET", `/api/volumes/${volume.id}/backups`, { key })).status).toBe(404);
  expect(existsSync(file)).toBe(false);
  expect(existsSync(join(server.dataDir, "backups", volume.id))).toBe(false);
  expect(await s3.client().file(objectKey).exists()).toBe(false);
  expect(await engineVolumeExists(volume.engineVolumeName)).toBe(false);
}

test("DELETE /api/volumes/{id} deletes its backups' files and S3 copies too", async () => {
  const made = await volumeWithBackup("deleted-alone");
  const deleted = await server.request("DELETE", `/api/volumes/${made.volume.id}`, { key });
  expect(deleted.status).toBe(200);
  await expectGone(made);
});

test("an app deleted with deleteVolumes=true takes its volumes' backups with them", async () => {
  const appId = createStoppedApp(server, workspaceId, "with-backups");
  const made = await volumeWithBackup("deleted-with-app", appId);
  expect((await server.request("DELETE", `/api/apps/${appId}?deleteVolumes=true`, { key })).status).toBe(202);
  await poll("the volume to be deleted", 30_000, async () => ((await server.request("GET", `/api/volumes/${made.volume.id}`, { key })).status === 404 ? true : undefined));
  await expectGone(made);
});

test("a volume with a backup or a restore running is not deleted, nor is its app with deleteVolumes=true", async () => {
  const restored = await volumeWithBackup("restored");
  const appId = createStoppedApp(server, workspaceId, "backed-up");
  const backedUp = await createTestVolume(server, workspaceId, "backed-up", appId);
  made.push(backedUp);
  // From here every backup (a restore's pre-restore one too) stays `running`.
  await server.stop();
  server.env.PLATFORM_TEST_PAUSE_AT = "volume-backup.placed";
  await server.boot();

  expect((await server.request("POST", `/api/volumes/${backedUp.id}/backups`, { key })).status).toBe(202);
  await poll("the backup to reach its pause", 60_000, async () => (server.output.includes("test pause at volume-backup.placed") ? true : undefined));
  const refusedApp = await server.request("DELETE", `/api/apps/${appId}?deleteVolumes=true`, { key });
  expect(refusedApp.status).toBe(409);
  expect(refusedApp.body.code).toBe("BACKUP_IN_PROGRESS");
  expect((await server.request("GET", `/api/apps/${appId}`, { key })).body.app.status).toBe("stopped");
  const detachedFirst = await server.request("DELETE", `/api/volumes/${backedUp.id}`, { key });
  expect(detachedFirst.body.code).toBe("VOLUME_ATTACHED");

  const restoring = await server.request("POST", `/api/volumes/${restored.volume.id}/restore`, { key, body: { backupId: restored.backup.id } });
  expect(restoring.status).toBe(202);
  const refused = await server.request("DELETE", `/api/volumes/${restored.volume.id}`, { key });
  expect(refused.status).toBe(409);
  expect(refused.body.code).toBe("RESTORE_IN_PROGRESS");
  expect(existsSync(restored.file)).toBe(true);
  expect(await s3.client().file(restored.objectKey).exists()).toBe(true);
  expect((await server.request("GET", `/api/volumes/${restored.volume.id}/backups`, { key })).status).toBe(200);
});
