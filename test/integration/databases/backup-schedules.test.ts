// Backup schedules on a real Redis (the fastest engine to back up), with expressions firing every
// few seconds: runs make scheduled backups and retention trims them (rows and files) but never a
// manual one; a cleared schedule runs no more; a slot missed while the server was down runs once
// at start; a stopped database gives failed scheduled backups saying why, bounded in number, and
// its details warn that backups are overdue. The tests share one database and run in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { TestServer } from "../../helpers/server";
import { expectErrorEnvelope } from "../../helpers/auth-matrix";
import { createDatabase, deleteAllDatabases, poll, removeWorkspaceNetworks, waitForStatus } from "../../helpers/databases";
import { waitForBackup } from "../../helpers/backups";

const EVERY_2_SECONDS = "*/2 * * * * *";

let server: TestServer;
let key: string;
let workspaceId: string;
let databaseId: string;
let manualBackup: any;

beforeAll(async () => {
  server = await TestServer.start();
  ({ key, workspaceId } = await server.createKey("backup schedule tests"));
  const { database } = await createDatabase(server, key, { name: "scheduled", engine: "redis", memoryMB: 256, storageGB: 1 });
  databaseId = database.id;
  await waitForStatus(server, key, databaseId, ["running"]);
});

afterAll(async () => {
  if (!server) return;
  await deleteAllDatabases(server, key);
  await server.stop();
  removeWorkspaceNetworks(workspaceId);
});

const schedulePath = () => `/api/databases/${databaseId}/backup-schedule`;
const setSchedule = (body: Record<string, unknown>) => server.request("PUT", schedulePath(), { key, body });
const listBackups = async (): Promise<any[]> => (await server.request("GET", `/api/databases/${databaseId}/backups`, { key })).body.backups;
const scheduledBackups = async (status: string) => (await listBackups()).filter((backup) => backup.type === "scheduled" && backup.status === status);
/** The backup operations the platform itself began: one per scheduled run that got to dump. */
const scheduledRuns = async (): Promise<any[]> =>
  (await server.request("GET", `/api/databases/${databaseId}/operations`, { key })).body.operations.filter(
    (operation: any) => operation.type === "backup" && operation.actor.type === "system",
  );
async function details() {
  const { status, body } = await server.request("GET", `/api/databases/${databaseId}`, { key });
  if (status !== 200) throw new Error(`GET database answered ${status}: ${JSON.stringify(body)}`);
  return body;
}

/** Clears the schedule and waits until no backup or verify runs any more and the last run's retention is done. */
async function clearScheduleAndSettle() {
  const cleared = await server.request("DELETE", schedulePath(), { key });
  expect(cleared.status).toBe(200);
  const working = (backup: any) => backup.status === "running" || backup.verification?.status === "running";
  await poll("the last scheduled run to finish", 60_000, async () => ((await listBackups()).some(working) ? undefined : true));
  // Retention follows the run's end by a few milliseconds.
  await Bun.sleep(500);
}

describe("setting a schedule", () => {
  test("a database has none at first: GET answers schedule null, its details no warning", async () => {
    const { status, body } = await server.request("GET", schedulePath(), { key });
    expect(status).toBe(200);
    expect(body.schedule).toBeNull();
    expect((await details()).backups).toEqual({ lastCompletedAt: null, schedule: null, warning: null });
  });

  test("an expression croner cannot read is 400 INVALID_CRON with croner's reason; so are a date and one that never fires", async () => {
    const invalid = await setSchedule({ cron: "61 * * * *" });
    expectErrorEnvelope(invalid, 400, "INVALID_CRON");
    expect(invalid.body.error).toContain("Invalid value for minute: 61");
    expectErrorEnvelope(await setSchedule({ cron: "every day" }), 400, "INVALID_CRON");
    expectErrorEnvelope(await setSchedule({ cron: "2030-01-01T03:00:00" }), 400, "INVALID_CRON");
    expectErrorEnvelope(await setSchedule({ cron: "0 0 30 2 *" }), 400, "INVALID_CRON");
    expectErrorEnvelope(await setSchedule({ cron: "0 3 * * *", keepLast: 0 }), 400, "VALIDATION_FAILED");
    expectErrorEnvelope(await setSchedule({ cron: "0 3 * * *", keepWeeklyWeeks: 521 }), 400, "VALIDATION_FAILED");
    expect((await server.request("GET", schedulePath(), { key })).body.schedule).toBeNull();
  });

  test("PUT answers the schedule with its defaults and next run; GET reads it back; it is in the audit log", async () => {
    const before = Date.now();
    const { status, body } = await setSchedule({ cron: "0 3 * * *" });
    expect(status).toBe(200);
    expect(body.data.schedule).toEqual(body.schedule);
    expect(body.schedule).toMatchObject({ databaseId, cron: "0 3 * * *", keepLast: 7, keepDailyDays: 0, keepWeeklyWeeks: 0, verify: false, lastRunAt: null });
    const nextRun = new Date(body.schedule.nextRunAt);
    expect([nextRun.getUTCHours(), nextRun.getUTCMinutes()]).toEqual([3, 0]);
    expect(nextRun.getTime() - before).toBeLessThanOrEqual(24 * 3_600_000);
    expect((await server.request("GET", schedulePath(), { key })).body.schedule).toEqual(body.schedule);
    const audit = await server.request("GET", "/api/organization/audit-log?limit=50", { key });
    expect(audit.body.events.find((event: any) => event.action === "database.backup_schedule_set")?.target).toContain(databaseId);
  });
});

describe("runs and retention", () => {
  test("every 2 s with keepLast 2: runs back up, only the 2 newest completed scheduled backups stay, a manual one is never trimmed", async () => {
    const made = await server.request("POST", `/api/databases/${databaseId}/backups`, { key });
    manualBackup = await waitForBackup(server, key, databaseId, made.body.backup.id);
    expect(manualBackup.status).toBe("completed");

    const { status, body } = await setSchedule({ cron: EVERY_2_SECONDS, keepLast: 2 });
    expect(status).toBe(200);
    expect(body.schedule).toMatchObject({ cron: EVERY_2_SECONDS, keepLast: 2 });
    expect(new Date(body.schedule.nextRunAt).getTime() - Date.now()).toBeLessThanOrEqual(2_000);

    await poll("3 scheduled runs, trimmed to 2 completed scheduled backups", 20_000, async () => {
      const runs = (await scheduledRuns()).filter((operation) => operation.status === "succeeded");
      return runs.length >= 3 && (await scheduledBackups("completed")).length === 2 ? true : undefined;
    });
    expect((await listBackups()).find((backup) => backup.id === manualBackup.id)).toEqual(manualBackup);
    expect((await server.request("GET", schedulePath(), { key })).body.schedule.lastRunAt).not.toBeNull();
  });

  test("while backups keep completing, the database's details show the schedule and no warning", async () => {
    const { backups } = await details();
    expect(backups.schedule).toMatchObject({ cron: EVERY_2_SECONDS });
    expect(backups.warning).toBeNull();
    expect(Date.now() - new Date(backups.lastCompletedAt).getTime()).toBeLessThan(5_000);
  });

  test("DELETE clears the schedule: no run starts afterwards; the trimmed backups' files are gone from the data dir", async () => {
    await clearScheduleAndSettle();
    expect((await server.request("GET", schedulePath(), { key })).body.schedule).toBeNull();
    const runsBefore = (await scheduledRuns()).length;
    await Bun.sleep(5_000);
    expect((await scheduledRuns()).length).toBe(runsBefore);

    const backups = await listBackups();
    const completedScheduled = backups.filter((backup) => backup.type === "scheduled" && backup.status === "completed");
    expect(completedScheduled).toHaveLength(2);
    const dir = join(server.dataDir, "backups", databaseId);
    const files = readdirSync(dir).sort();
    expect(files).toEqual([manualBackup, ...completedScheduled].map((backup) => backup.storageKey.split("/")[1]).sort());
    const trimmed = (await scheduledRuns()).map((operation) => operation.backupId).filter((backupId) => !backups.some((backup) => backup.id === backupId));
    expect(trimmed.length).toBeGreaterThanOrEqual(1);
    for (const backupId of trimmed) expect(existsSync(join(dir, `${backupId}.rdb.gz`))).toBe(false);

    const again = await server.request("DELETE", schedulePath(), { key });
    expect(again.body).toMatchObject({ deleted: false, schedule: null });
  });
});

describe("verify", () => {
  test("with verify set, a new scheduled backup is verified after its run", async () => {
    expect((await setSchedule({ cron: EVERY_2_SECONDS, keepLast: 2, verify: true })).body.schedule.verify).toBe(true);
    const verified = await poll("a verified scheduled backup", 60_000, async () =>
      (await scheduledBackups("completed")).find((backup) => backup.verification?.status === "passed" && backup.verifiedAt !== null),
    );
    expect(verified.verification.checks.map((check: { name: string }) => check.name)).toEqual(["keys"]);
    await clearScheduleAndSettle();
  });
});

describe("a run missed while the server was down", () => {
  test("runs once at start, however many slots were missed", async () => {
    // Three slots a minute, 8 to 10 s from now: all of them pass while the server is down, and the next ones are a minute away.
    const firstSlot = Math.ceil(Date.now() / 1000) * 1000 + 8_000;
    const seconds = [0, 1, 2].map((offset) => new Date(firstSlot + offset * 1000).getUTCSeconds());
    expect((await setSchedule({ cron: `${seconds.join(",")} * * * * *` })).status).toBe(200);
    const runsBefore = (await scheduledRuns()).length;
    await server.stop();
    const stoppedAt = Date.now();
    await Bun.sleep(firstSlot + 3_000 - Date.now());
    const restartedAt = Date.now();
    await server.boot();
    expect(stoppedAt).toBeLessThan(firstSlot);
    const runs = await poll("the missed run", 15_000, async () => {
      const all = await scheduledRuns();
      return all.length > runsBefore && all.every((operation) => operation.status !== "running" && operation.status !== "pending") ? all : undefined;
    });
    expect(runs.length).toBe(runsBefore + 1);
    expect(runs[0].status).toBe("succeeded");
    const { schedule } = (await server.request("GET", schedulePath(), { key })).body;
    expect(new Date(schedule.lastRunAt).getTime()).toBeGreaterThanOrEqual(restartedAt);
    expect(new Date(schedule.nextRunAt).getTime() - Date.now()).toBeGreaterThan(40_000);
    // Once, not once per missed slot.
    await Bun.sleep(3_000);
    expect((await scheduledRuns()).length).toBe(runsBefore + 1);
    await clearScheduleAndSettle();
  });
});

describe("a database that is not running", () => {
  test("each run is a failed scheduled backup saying why; only the newest keepLast of them are kept", async () => {
    const stop = await server.request("POST", `/api/databases/${databaseId}/stop`, { key });
    expect(stop.status).toBe(202);
    await waitForStatus(server, key, databaseId, ["stopped"]);
    expect((await setSchedule({ cron: EVERY_2_SECONDS, keepLast: 2 })).status).toBe(200);

    const [failed] = await poll("a failed scheduled backup", 10_000, async () => {
      const found = await scheduledBackups("failed");
      return found.length ? found : undefined;
    });
    expect(failed.error).toContain("the database is stopped");
    expect(failed.finishedAt).not.toBeNull();

    const twoFailed = await poll("two failed scheduled backups", 10_000, async () => {
      const found = await scheduledBackups("failed");
      return found.length === 2 ? found : undefined;
    });
    await Bun.sleep(4_500);
    const later = await scheduledBackups("failed");
    expect(later).toHaveLength(2);
    expect(later.map((backup) => backup.id)).not.toEqual(twoFailed.map((backup) => backup.id));
  });

  test("its details warn once the last completed backup is older than twice the interval", async () => {
    const { backups } = await poll("the overdue warning", 10_000, async () => {
      const body = await details();
      return body.backups.warning ? body : undefined;
    });
    expect(backups.warning).toContain("more than twice the schedule's interval (2 s)");
    expect(Date.now() - new Date(backups.lastCompletedAt).getTime()).toBeGreaterThan(4_000);
    expect(backups.schedule).toMatchObject({ cron: EVERY_2_SECONDS });
    await clearScheduleAndSettle();
    expect((await details()).backups.warning).toBeNull();
  });
});
