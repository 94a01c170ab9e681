// Volume backups against a real server and engine: a backup restores exactly (every path, type,
// mode, owner, link target, mtime and content hash of a tree), its download is the file whose
// SHA-256 it records, a verify reads the archive back and tells a corrupted file, and a running
// container that is not the volume's app keeps a restore away (409 VOLUME_IN_USE) but not a backup,
// and a schedule makes scheduled backups, verifies them and keeps only what its retention says.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { dockerCli, uniqueName } from "../../helpers/docker";
import { sha256Hex } from "../../helpers/backups";
import { poll } from "../../helpers/databases";
import {
  completedVolumeBackup,
  createTestVolume,
  engineVolumeExists,
  engineVolumeOf,
  inVolume,
  inventory,
  removeEngineVolumes,
  waitForRestore,
  waitForVolumeBackup,
  writeTree,
  type TestVolume,
} from "../../helpers/volume-backups";

// Set here too: in a run of several files the preload's timeout does not reach every file's tests.
setDefaultTimeout(120_000);

let server: TestServer;
let key: string;
let workspaceId: string;
const made: TestVolume[] = [];

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("volume backups"));
});

afterAll(async () => {
  await server?.stop();
  for (const volume of made) await removeEngineVolumes(volume.id);
});

async function volumeWithTree(name: string): Promise<TestVolume> {
  const volume = await createTestVolume(server, workspaceId, name);
  made.push(volume);
  await writeTree(volume.engineVolumeName);
  return volume;
}

describe("backup and restore", () => {
  test("a restore puts back exactly what the backup held, in a new engine volume; the old one is removed", async () => {
    const volume = await volumeWithTree("exact");
    const before = await inventory(volume.engineVolumeName);
    expect(before).toContain("./dangling|l|777|0:0|no-such-file");
    expect(before).toContain("./with space|d|2775|0:0|");
    const backup = await completedVolumeBackup(server, key, volume.id);
    expect(backup).toMatchObject({ type: "manual", machineId: "local", status: "completed", error: null });
    expect(backup.archiveBytes).toBeGreaterThan(300_000);

    // Changed afterwards: a file rewritten, one deleted, one added, a mode and an owner changed.
    await inVolume(volume.engineVolumeName, "cd /data; printf changed > a/b/c/hello.txt; rm empty; touch new; chmod 0644 a/random.bin; chown 0:0 a/random.bin");
    expect(await inventory(volume.engineVolumeName)).not.toBe(before);

    const restoring = await server.request("POST", `/api/volumes/${volume.id}/restore`, { key, body: { backupId: backup.id } });
    expect(restoring.status).toBe(202);
    expect(restoring.body.restore.status).toBe("pending");
    const restore = await waitForRestore(server, key, volume.id, restoring.body.restore.id);
    expect(restore).toMatchObject({ status: "succeeded", error: null, backupId: backup.id });

    const now = engineVolumeOf(server, volume.id);
    expect(now).not.toBe(volume.engineVolumeName);
    expect(await inventory(now)).toBe(before);
    expect(await engineVolumeExists(volume.engineVolumeName)).toBe(false);
    // The content it replaced was kept as a pre-restore backup.
    const { body } = await server.request("GET", `/api/volumes/${volume.id}/backups`, { key });
    expect(body.backups.map((listed: any) => listed.type).sort()).toEqual(["manual", "pre-restore"]);
    expect(body.backups.find((listed: any) => listed.type === "pre-restore").status).toBe("completed");
    // No helper container is left.
    expect((await dockerCli("ps", "-aq", "--filter", `label=platform.volume=${volume.id}`)).trim()).toBe("");
  });

  test("the download is the gzip file the backup's sha256 names, and unpacks to the volume's files", async () => {
    const volume = await volumeWithTree("download");
    const backup = await completedVolumeBackup(server, key, volume.id);
    const response = await fetch(`${server.baseUrl}/api/volumes/${volume.id}/backups/${backup.id}/download`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-disposition")).toMatch(/^attachment; filename="download-.*\.tar\.gz"$/);
    const bytes = new Uint8Array(await response.arrayBuffer());
    await server.assertDocumented("GET", `/api/volumes/${volume.id}/backups/${backup.id}/download`, { status: 200, headers: response.headers, body: bytes });
    expect(bytes.byteLength).toBe(backup.sizeBytes);
    expect(sha256Hex(bytes)).toBe(backup.sha256);
    const listed = Bun.spawnSync(["tar", "-tzf", "-"], { stdin: bytes }).stdout.toString();
    expect(listed.split("\n")).toContain("./a/b/c/hello.txt");
  });

  test("a backup reads a volume a plain container runs with; a restore is refused while that container runs", async () => {
    const volume = await volumeWithTree("in-use");
    const container = uniqueName("vbackup-user");
    await dockerCli("run", "-d", "--name", container, "--network", "none", "--label", "platform.managed=true", "--label", `platform.workspace=${workspaceId}`, "-v", `${volume.engineVolumeName}:/data`, "platform-test/base:latest", "sleep", "300");
    try {
      const backup = await completedVolumeBackup(server, key, volume.id);
      const refused = await server.request("POST", `/api/volumes/${volume.id}/restore`, { key, body: { backupId: backup.id } });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe("VOLUME_IN_USE");
      expect(refused.body.error).toContain(container);
      expect(engineVolumeOf(server, volume.id)).toBe(volume.engineVolumeName);
    } finally {
      await dockerCli("rm", "-f", container);
    }
  });
});

describe("verify", () => {
  test("a whole backup passes with what it holds counted; a corrupted file fails, and cannot be restored", async () => {
    const volume = await volumeWithTree("verify");
    const backup = await completedVolumeBackup(server, key, volume.id);
    const started = await server.request("POST", `/api/volumes/${volume.id}/backups/${backup.id}/verify`, { key });
    expect(started.status).toBe(202);
    const passed = await waitForVolumeBackup(server, key, volume.id, backup.id, "verification");
    // hello.txt, its hard link (a link entry), random.bin, empty, the accented file; ., a, a/b, a/b/c, "with space"; two symlinks.
    expect(passed.verification).toMatchObject({ status: "passed", files: 4, directories: 5, symlinks: 2, otherEntries: 1, fileBytes: 300_007, error: null });
    expect(passed.verifiedAt).not.toBeNull();

    const file = join(server.dataDir, "backups", volume.id, `${backup.id}.tar.gz`);
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.byteLength / 2)]! ^= 0xff;
    writeFileSync(file, bytes);
    await server.request("POST", `/api/volumes/${volume.id}/backups/${backup.id}/verify`, { key });
    const failed = await waitForVolumeBackup(server, key, volume.id, backup.id, "verification");
    expect(failed.verification.status).toBe("failed");
    expect(failed.verification.error).toContain("SHA-256");

    const refused = await server.request("POST", `/api/volumes/${volume.id}/restore`, { key, body: { backupId: backup.id } });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe("BACKUP_CORRUPT");
    expect(engineVolumeOf(server, volume.id)).toBe(volume.engineVolumeName);
  });
});

describe("schedule", () => {
  test("every 2 s: scheduled backups, each verified; only keepLast of them stay, the manual one stays too", async () => {
    const volume = await volumeWithTree("scheduled");
    const manual = await completedVolumeBackup(server, key, volume.id);
    const set = await server.request("PUT", `/api/volumes/${volume.id}/backup-schedule`, { key, body: { cron: "*/2 * * * * *", keepLast: 2, verify: true } });
    expect(set.status).toBe(200);
    expect(set.body.schedule).toMatchObject({ volumeId: volume.id, cron: "*/2 * * * * *", keepLast: 2, keepDailyDays: 0, verify: true });
    const seen = new Set<string>();
    try {
      await poll("four scheduled runs", 60_000, async () => {
        const { body } = await server.request("GET", `/api/volumes/${volume.id}/backups`, { key });
        for (const backup of body.backups) if (backup.type === "scheduled") seen.add(backup.id);
        return seen.size >= 4 ? true : undefined;
      });
    } finally {
      const cleared = await server.request("DELETE", `/api/volumes/${volume.id}/backup-schedule`, { key });
      expect(cleared.body).toMatchObject({ deleted: true, schedule: { nextRunAt: null } });
    }
    // The run under way when the schedule was cleared finishes, with its retention.
    await Bun.sleep(1_500);
    const { body } = await server.request("GET", `/api/volumes/${volume.id}/backups`, { key });
    const scheduled = body.backups.filter((backup: any) => backup.type === "scheduled");
    expect(scheduled.length).toBeLessThanOrEqual(3);
    expect(scheduled.filter((backup: any) => backup.status === "completed").length).toBeLessThanOrEqual(3);
    expect(scheduled.every((backup: any) => backup.status !== "failed")).toBe(true);
    expect(body.backups.map((backup: any) => backup.id)).toContain(manual.id);
    const verified = scheduled.filter((backup: any) => backup.verification?.status === "passed");
    expect(verified.length).toBeGreaterThan(0);
    expect((await server.request("GET", `/api/volumes/${volume.id}/backup-schedule`, { key })).body.schedule).toBeNull();
  });
});

