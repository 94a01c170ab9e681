import { describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { assertWithinQuota, bytesToMB, quotaRefusal } from "../../src/quotas/limits";
import { MIN_ENTRY_BYTES, treeBytes, WorkspaceDisk } from "../../src/quotas/usage";
import { loadConfig } from "../../src/config";
import { ApiError } from "../../src/http/errors";

describe("quota decisions", () => {
  test("a change fits while use plus growth stays within the limit", () => {
    expect(quotaRefusal("apps", 49, 1, 50)).toBeNull();
    expect(quotaRefusal("memoryMB", 1000, 24, 1024)).toBeNull();
  });

  test("the refusal names the quota, the use, the limit and the setting", () => {
    expect(quotaRefusal("apps", 2, 1, 2)).toBe(
      "Workspace quota for apps exceeded: 2 apps in use of 2 apps, this needs 1 app more (the platform's operator can raise PLATFORM_QUOTA_APPS)",
    );
    expect(quotaRefusal("memoryMB", 960, 128, 1024)).toContain("memory exceeded: 960 MB in use of 1024 MB, this needs 128 MB more");
    expect(quotaRefusal("dbPorts", 1, 1, 1)).toContain("PLATFORM_QUOTA_DB_PORTS");
    expect(quotaRefusal("databases", 3, 1, 3)).toContain("PLATFORM_QUOTA_DATABASES");
    expect(quotaRefusal("diskMB", bytesToMB(3.5 * 1024 * 1024), 1, 4)).toContain("3.5 MB in use of 4 MB");
  });

  test("shrinking always fits, even above a lowered quota", () => {
    expect(quotaRefusal("memoryMB", 4096, -512, 1024)).toBeNull();
    expect(quotaRefusal("memoryMB", 4096, 0, 1024)).toBeNull();
  });

  test("a refusal is a 409 QUOTA_EXCEEDED", () => {
    try {
      assertWithinQuota("databases", 20, 1, 20);
      throw new Error("not refused");
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(409);
      expect((error as ApiError).code).toBe("QUOTA_EXCEEDED");
    }
  });

  test("settings: generous defaults, overridable, refused when not numbers", () => {
    const defaults = loadConfig({});
    expect(defaults.quotas).toEqual({ apps: 50, databases: 20, memoryMB: 16_384, dbPorts: 20, diskMB: 10_240, backupsPerDatabase: 20 });
    expect(defaults.defaultCpus).toBe(1);
    expect(loadConfig({ PLATFORM_QUOTA_APPS: "2" }).quotas.apps).toBe(2);
    expect(() => loadConfig({ PLATFORM_QUOTA_MEMORY_MB: "lots" })).toThrow(/PLATFORM_QUOTA_MEMORY_MB/);
    expect(() => loadConfig({ PLATFORM_DEFAULT_CPUS: "64" })).toThrow(/PLATFORM_DEFAULT_CPUS/);
  });
});

describe("disk accounting", () => {
  const root = join(tmpdir(), `quota-disk-${crypto.randomUUID()}`);

  test("a tree's bytes: every entry its size but at least 4 KiB, symlinks not followed, a missing dir is empty", async () => {
    mkdirSync(join(root, "a/b"), { recursive: true });
    writeFileSync(join(root, "a/one"), "x".repeat(1000));
    writeFileSync(join(root, "a/b/two"), "y".repeat(24));
    writeFileSync(join(root, "a/big"), "z".repeat(10_000));
    symlinkSync("/etc", join(root, "a/link"));
    // b, one, two and link at 4 KiB each, big at its size.
    expect(await treeBytes(join(root, "a"))).toBe(4 * MIN_ENTRY_BYTES + 10_000);
    expect(await treeBytes(join(root, "missing"))).toBe(0);
    rmSync(root, { recursive: true, force: true });
  });

  test("thousands of empty folders are not free", async () => {
    for (let index = 0; index < 2000; index++) mkdirSync(join(root, "bomb", String(index)), { recursive: true });
    expect(await treeBytes(join(root, "bomb"))).toBe(2000 * MIN_ENTRY_BYTES);
    rmSync(root, { recursive: true, force: true });
  });

  test("every registered kind counts (app sources now, backups later)", async () => {
    const disk = new WorkspaceDisk();
    disk.register("appSources", async (workspaceId, { exceptAppId }) => (workspaceId === "ws" ? (exceptAppId ? 100 : 300) : 0));
    disk.register("backups", async () => 50);
    expect(await disk.bytesUsed("ws")).toBe(350);
    expect(await disk.bytesUsed("ws", { exceptAppId: "app_1" })).toBe(150);
    expect(await disk.bytesUsed("other")).toBe(50);
    expect(await disk.bytesByKind("ws")).toEqual({ appSources: 300, buildLogs: 0, backups: 50, volumes: 0, inProgress: 0 });
  });

  test("a write of unknown size counts as it goes, and is refused once it would pass the quota", async () => {
    const MB = 1024 * 1024;
    const disk = new WorkspaceDisk();
    disk.register("backups", async () => MB / 2);
    const first = await disk.openWrite("ws", 1);
    const second = await disk.openWrite("ws", 1);
    first.add(MB / 4);
    expect((await disk.bytesByKind("ws")).inProgress).toBe(MB / 4 + MIN_ENTRY_BYTES);
    // The second write sees the first one's bytes as they are written.
    expect(() => second.add(MB / 3)).toThrow(/quota for disk exceeded: 0\.8 MB in use of 1 MB, this needs 0\.3 MB more/);
    first.release();
    second.release();
    expect(await disk.bytesUsed("ws")).toBe(MB / 2);
    disk.register("backups", async () => MB);
    await expect(disk.openWrite("ws", 1)).rejects.toThrow(/1 MB in use of 1 MB, this needs 4 KB more/);
    expect(await disk.bytesUsed("ws")).toBe(MB);
  });

  test("bytes reserved by an upload being checked count for every other check until released", async () => {
    const disk = new WorkspaceDisk();
    disk.register("appSources", async () => 100);
    const releaseFirst = disk.reserve("ws", 40);
    const releaseSecond = disk.reserve("ws", 30);
    expect(await disk.bytesUsed("ws")).toBe(170);
    expect(await disk.bytesUsed("other")).toBe(100);
    releaseFirst();
    releaseFirst(); // a second call changes nothing
    expect(await disk.bytesUsed("ws")).toBe(130);
    releaseSecond();
    expect(await disk.bytesUsed("ws")).toBe(100);
  });
});
