// The rules every backup schedule follows, databases' and volumes' alike (src/backups): the stored
// settings of a schedule, what a run deletes, and the jobs (a slot missed while the platform was
// down runs once at start, a run never overlaps the previous one, a cleared schedule runs no more).
import { expect, test } from "bun:test";
import { retentionDeletes, scheduleFieldsOf, scheduleSettingsOf } from "../../../src/backups/schedule-rules";
import { ScheduleJobs } from "../../../src/backups/schedule-jobs";
import { ApiError } from "../../../src/http/errors";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 28, 12);

test("settings: omitted ones take their defaults, the expression is trimmed, a bad one is 400 INVALID_CRON", () => {
  expect(scheduleSettingsOf({ cron: " 0 3 * * * " }, NOW)).toEqual({ cron: "0 3 * * *", keepLast: 7, keepDailyDays: 0, keepWeeklyWeeks: 0, verify: false, updatedAt: NOW });
  expect(scheduleSettingsOf({ cron: "@daily", keepLast: 2, keepDailyDays: 3, keepWeeklyWeeks: 4, verify: true }, NOW)).toMatchObject({ keepLast: 2, keepDailyDays: 3, keepWeeklyWeeks: 4, verify: true });
  for (const cron of ["not a cron", "2026-12-01T00:00:00", "0 0 31 2 *"]) {
    const refusal = (() => {
      try {
        scheduleSettingsOf({ cron }, NOW);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(ApiError);
    expect((refusal as ApiError).code).toBe("INVALID_CRON");
  }
});

test("the answer: the next run from the expression, times as ISO strings", () => {
  const fields = scheduleFieldsOf({ ...scheduleSettingsOf({ cron: "0 3 * * *" }, NOW), lastRunAt: null, createdAt: NOW });
  expect(fields.lastRunAt).toBeNull();
  expect(new Date(fields.nextRunAt!).getUTCHours()).toBe(3);
  expect(fields.createdAt).toBe(new Date(NOW).toISOString());
});

test("a run deletes the failed scheduled backups past keepLast always, completed ones only after a successful run, never others", () => {
  const backup = (id: string, type: string, status: string, daysAgo: number) => ({ id, type, status, createdAt: NOW - daysAgo * DAY, verifiedAt: null });
  const backups = [
    backup("s1", "scheduled", "completed", 0),
    backup("s2", "scheduled", "completed", 1),
    backup("s3", "scheduled", "completed", 2),
    backup("f1", "scheduled", "failed", 0.5),
    backup("f2", "scheduled", "failed", 1.5),
    backup("m1", "manual", "completed", 5),
    backup("p1", "pre-restore", "completed", 6),
    backup("r1", "scheduled", "running", 0),
  ];
  const policy = { keepLast: 1, keepDailyDays: 0, keepWeeklyWeeks: 0 };
  expect([...retentionDeletes(backups, policy, NOW, true)].sort()).toEqual(["f2", "s2", "s3"]);
  expect([...retentionDeletes(backups, policy, NOW, false)].sort()).toEqual(["f2"]);
});

test("jobs: a slot missed while down runs once at start; runs never overlap; a stopped job runs no more", async () => {
  const runs: string[] = [];
  let release!: () => void;
  const jobs = new ScheduleJobs("volume", async (ownerId) => {
    runs.push(ownerId);
    await new Promise<void>((resolve) => (release = resolve));
  }, () => Date.now());
  const longAgo = Date.now() - 3 * DAY;
  // Daily at 03:00, last run three days ago: missed (once). Set a minute ago with a yearly slot: nothing missed.
  jobs.start([
    { ownerId: "vol_missed", cron: "0 3 * * *", lastRunAt: longAgo, updatedAt: longAgo },
    { ownerId: "vol_fresh", cron: "0 0 1 1 *", lastRunAt: null, updatedAt: Date.now() - 60_000 },
  ]);
  await Bun.sleep(50);
  expect(runs).toEqual(["vol_missed"]);
  // Every second: while the first run of it is held, later ticks are skipped.
  jobs.schedule("vol_busy", "* * * * * *");
  await Bun.sleep(2_300);
  expect(runs.filter((owner) => owner === "vol_busy")).toHaveLength(1);
  jobs.stop("vol_busy");
  release();
  await Bun.sleep(1_200);
  expect(runs.filter((owner) => owner === "vol_busy")).toHaveLength(1);
  jobs.stopAll();
});
