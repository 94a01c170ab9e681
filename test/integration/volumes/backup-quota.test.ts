// A volume backup is bounded by the workspace's disk quota as its file is written: past it, the
// backup fails saying so and keeps no file.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { createTestVolume, inVolume, removeEngineVolumes, waitForVolumeBackup, type TestVolume } from "../../helpers/volume-backups";

// Set here too: in a run of several files the preload's timeout does not reach every file's tests.
setDefaultTimeout(120_000);

let server: TestServer;
let volume: TestVolume | undefined;

beforeAll(async () => {
  // The volume's own 3 MB count too (a workspace already over its quota may not start a backup):
  // 5 MB leaves room to start, not to finish.
  server = await TestServer.start({ PLATFORM_QUOTA_DISK_MB: "5" });
});

afterAll(async () => {
  await server?.stop();
  if (volume) await removeEngineVolumes(volume.id);
});

test("a volume whose archive passes PLATFORM_QUOTA_DISK_MB: the backup fails naming the quota, and no file is kept", async () => {
  const { key, workspaceId } = await server.createKey("volume quota");
  volume = await createTestVolume(server, workspaceId, "big");
  // Random bytes: gzip cannot shrink them below the quota.
  await inVolume(volume.engineVolumeName, "head -c 3000000 /dev/urandom > /data/random.bin");
  const started = await server.request("POST", `/api/volumes/${volume.id}/backups`, { key });
  expect(started.status).toBe(202);
  const failed = await waitForVolumeBackup(server, key, volume.id, started.body.backup.id);
  expect(failed.status).toBe("failed");
  expect(failed.error).toMatch(/quota for disk exceeded/);
  const folder = join(server.dataDir, "backups", volume.id);
  expect(existsSync(folder) ? readdirSync(folder) : []).toEqual([]);
});
