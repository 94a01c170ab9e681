// Volume backups with an S3 bucket (s3rver on loopback), as database backups: a backup is
// `completed` only once its copy is in the bucket and read back with the same SHA-256; a file gone
// from the data dir is downloaded and restored from its copy; deleting the backup deletes the object.
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { TestS3 } from "../../helpers/s3";
import { sha256Hex } from "../../helpers/backups";
import { completedVolumeBackup, createTestVolume, engineVolumeOf, inventory, removeEngineVolumes, waitForRestore, writeTree, type TestVolume } from "../../helpers/volume-backups";

// Set here too: in a run of several files the preload's timeout does not reach every file's tests.
setDefaultTimeout(120_000);

let s3: TestS3;
let server: TestServer;
let key: string;
let volume: TestVolume | undefined;

beforeAll(async () => {
  s3 = await TestS3.start();
  server = await TestServer.start(s3.settings({ prefix: "volumes-test/" }));
  const created = await server.createKey("volume s3");
  key = created.key;
  volume = await createTestVolume(server, created.workspaceId, "s3");
  await writeTree(volume.engineVolumeName);
});

afterAll(async () => {
  await server?.stop();
  if (volume) await removeEngineVolumes(volume.id);
  await s3?.stop();
});

test("the copy is confirmed in the bucket; with the local file gone, download and restore use it; delete removes it", async () => {
  const original = await inventory(volume!.engineVolumeName);
  const backup = await completedVolumeBackup(server, key, volume!.id);
  const objectKey = `volumes-test/${volume!.id}/${backup.id}.tar.gz`;
  expect(backup.copies).toEqual([{ destination: "s3", location: `s3://${s3.bucket}/${objectKey}`, status: "completed", error: null, confirmedAt: expect.any(String) }]);
  expect(sha256Hex(new Uint8Array(await s3.client().file(objectKey).arrayBuffer()))).toBe(backup.sha256);

  rmSync(join(server.dataDir, "backups", volume!.id, `${backup.id}.tar.gz`));
  const download = await fetch(`${server.baseUrl}/api/volumes/${volume!.id}/backups/${backup.id}/download`, { headers: { authorization: `Bearer ${key}` } });
  expect(download.status).toBe(200);
  expect(sha256Hex(new Uint8Array(await download.arrayBuffer()))).toBe(backup.sha256);

  rmSync(join(server.dataDir, "backups", volume!.id, `${backup.id}.tar.gz`));
  const restoring = await server.request("POST", `/api/volumes/${volume!.id}/restore`, { key, body: { backupId: backup.id } });
  expect(restoring.status).toBe(202);
  expect((await waitForRestore(server, key, volume!.id, restoring.body.restore.id)).status).toBe("succeeded");
  expect(await inventory(engineVolumeOf(server, volume!.id))).toBe(original);

  const deleted = await server.request("DELETE", `/api/volumes/${volume!.id}/backups/${backup.id}`, { key });
  expect(deleted.status).toBe(200);
  expect(await s3.client().file(objectKey).exists()).toBe(false);
});
