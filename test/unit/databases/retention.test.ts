// Retention of scheduled backups (retentionPlan in src/databases/backup-schedules.ts): which
// backups a schedule's policy lets go, on a fixed calendar.
import { describe, expect, test } from "bun:test";
import { retentionPlan, type RetentionCandidate, type RetentionPolicy } from "../../../src/backups/schedule-rules";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Wednesday 2025-06-18, 12:00 UTC: its ISO week began on Monday the 16th. */
const NOW = Date.UTC(2025, 5, 18, 12);

let count = 0;
function backup(createdAt: number, fields: Partial<RetentionCandidate> = {}): RetentionCandidate {
  return { id: `bk_${++count}`, type: "scheduled", status: "completed", createdAt, verifiedAt: null, ...fields };
}
const policy = (fields: Partial<RetentionPolicy>): RetentionPolicy => ({ keepLast: 1, keepDailyDays: 0, keepWeeklyWeeks: 0, ...fields });
const ids = (backups: RetentionCandidate[]) => backups.map((one) => one.id);
/** What is kept of `backups`: those the plan does not delete. */
const keptOf = (backups: RetentionCandidate[], rules: Partial<RetentionPolicy>, now = NOW) => {
  const plan = retentionPlan(backups, policy(rules), now);
  return ids(backups.filter((one) => !plan.completed.includes(one.id) && !plan.failed.includes(one.id)));
};

describe("keepLast", () => {
  test("keeps the newest N completed scheduled backups and lets the older ones go", () => {
    const backups = [1, 2, 3, 4, 5].map((hours) => backup(NOW - hours * HOUR));
    const plan = retentionPlan(backups, policy({ keepLast: 2 }), NOW);
    expect(plan.completed.sort()).toEqual(ids(backups.slice(2)).sort());
    expect(plan.failed).toEqual([]);
  });

  test("orders by createdAt, whatever order the backups come in", () => {
    const newest = backup(NOW - HOUR);
    const older = backup(NOW - 3 * HOUR);
    const middle = backup(NOW - 2 * HOUR);
    expect(retentionPlan([older, newest, middle], policy({ keepLast: 2 }), NOW).completed).toEqual([older.id]);
  });

  test("fewer backups than N: nothing goes", () => {
    const backups = [backup(NOW - HOUR), backup(NOW - 2 * HOUR)];
    expect(retentionPlan(backups, policy({ keepLast: 7 }), NOW)).toEqual({ completed: [], failed: [] });
  });

  test("failed and running backups do not take a place among the N", () => {
    const newestCompleted = backup(NOW - 3 * HOUR);
    const backups = [backup(NOW - HOUR, { status: "running" }), backup(NOW - 2 * HOUR, { status: "failed" }), newestCompleted, backup(NOW - 4 * HOUR)];
    expect(retentionPlan(backups, policy({ keepLast: 1 }), NOW).completed).toEqual([backups[3]!.id]);
  });
});

describe("only scheduled backups are candidates", () => {
  test("manual, uploaded and pre-restore backups are never deleted, however old or many", () => {
    const others = ["manual", "uploaded", "pre-restore"].flatMap((type) => [10, 20, 30].map((days) => backup(NOW - days * DAY, { type })));
    const scheduled = [backup(NOW - HOUR), backup(NOW - 2 * HOUR)];
    const plan = retentionPlan([...others, ...scheduled], policy({ keepLast: 1 }), NOW);
    expect(plan.completed).toEqual([scheduled[1]!.id]);
    expect(plan.failed).toEqual([]);
  });

  test("a running scheduled backup is never touched", () => {
    const running = backup(NOW - 10 * DAY, { status: "running" });
    const plan = retentionPlan([backup(NOW - HOUR), running], policy({ keepLast: 1 }), NOW);
    expect([...plan.completed, ...plan.failed]).not.toContain(running.id);
  });
});

describe("the newest verified backup", () => {
  test("is kept even when keepLast would let it go", () => {
    const verified = backup(NOW - 5 * HOUR, { verifiedAt: NOW - 4 * HOUR });
    const olderVerified = backup(NOW - 6 * HOUR, { verifiedAt: NOW - 5 * HOUR });
    const backups = [backup(NOW - HOUR), backup(NOW - 2 * HOUR), verified, olderVerified];
    expect(retentionPlan(backups, policy({ keepLast: 1 }), NOW).completed.sort()).toEqual([backups[1]!.id, olderVerified.id].sort());
  });

  test("a newer verified manual backup is the newest verified one: an older verified scheduled one may then go", () => {
    const manualVerified = backup(NOW - 2 * HOUR, { type: "manual", verifiedAt: NOW - HOUR });
    const scheduledVerified = backup(NOW - 5 * HOUR, { verifiedAt: NOW - 4 * HOUR });
    const backups = [backup(NOW - HOUR), manualVerified, scheduledVerified];
    expect(retentionPlan(backups, policy({ keepLast: 1 }), NOW).completed).toEqual([scheduledVerified.id]);
  });

  test("a failed backup's verifiedAt does not count", () => {
    const failedVerified = backup(NOW - HOUR, { status: "failed", verifiedAt: NOW });
    const older = backup(NOW - 3 * HOUR, { verifiedAt: NOW - 2 * HOUR });
    const backups = [backup(NOW - 30 * 60_000), failedVerified, backup(NOW - 2 * HOUR), older];
    expect(retentionPlan(backups, policy({ keepLast: 1 }), NOW).completed).toEqual([backups[2]!.id]);
  });
});

describe("keepDailyDays", () => {
  test("keeps the newest backup of each UTC day of the last D days, today included", () => {
    // Two a day, at 02:00 and 10:00, from today back to 5 days ago.
    const backups = [0, 1, 2, 3, 4, 5].flatMap((days) => [10, 2].map((hour) => backup(Date.UTC(2025, 5, 18 - days, hour))));
    // keepLast 1 keeps today's 10:00 anyway; D = 3: today, yesterday and the day before, each its 10:00 one.
    expect(keptOf(backups, { keepLast: 1, keepDailyDays: 3 })).toEqual(ids([backups[0]!, backups[2]!, backups[4]!]));
  });

  test("days are UTC calendar days: 23:59 and 00:01 are two days", () => {
    const late = backup(Date.UTC(2025, 5, 17, 23, 59));
    const early = backup(Date.UTC(2025, 5, 18, 0, 1));
    expect(keptOf([early, late], { keepLast: 1, keepDailyDays: 2 })).toEqual(ids([early, late]));
    expect(keptOf([early, late], { keepLast: 1, keepDailyDays: 1 })).toEqual(ids([early]));
  });

  test("a day without backups still counts toward D", () => {
    const today = backup(Date.UTC(2025, 5, 18, 1));
    const threeDaysAgo = backup(Date.UTC(2025, 5, 15, 1));
    expect(keptOf([today, threeDaysAgo], { keepLast: 1, keepDailyDays: 3 })).toEqual(ids([today]));
    expect(keptOf([today, threeDaysAgo], { keepLast: 1, keepDailyDays: 4 })).toEqual(ids([today, threeDaysAgo]));
  });

  test("0 keeps nothing more than keepLast", () => {
    const backups = [0, 1, 2].map((days) => backup(NOW - days * DAY));
    expect(keptOf(backups, { keepLast: 1, keepDailyDays: 0 })).toEqual(ids([backups[0]!]));
  });
});

describe("keepWeeklyWeeks", () => {
  test("keeps the newest backup of each ISO week (Monday to Sunday) of the last W weeks, this one included", () => {
    // Sunday 22:00 and Monday 01:00 of each of the last 4 weeks, plus today (Wednesday).
    const today = backup(NOW);
    const weeks = [0, 1, 2, 3].flatMap((weeksAgo) => [
      backup(Date.UTC(2025, 5, 16 - 7 * weeksAgo, 1)), // Monday
      backup(Date.UTC(2025, 5, 15 - 7 * weeksAgo, 22)), // Sunday, the week before
    ]);
    // W = 3: this week (today's), last week (Sunday 15th, its newest), the week before (Sunday 8th).
    expect(keptOf([today, ...weeks], { keepLast: 1, keepWeeklyWeeks: 3 })).toEqual(ids([today, weeks[1]!, weeks[3]!]));
  });

  test("a week begins on Monday 00:00 UTC", () => {
    const sunday = backup(Date.UTC(2025, 5, 15, 23, 59));
    const monday = backup(Date.UTC(2025, 5, 16, 0, 1));
    expect(keptOf([monday, sunday], { keepLast: 1, keepWeeklyWeeks: 1 })).toEqual(ids([monday]));
    expect(keptOf([monday, sunday], { keepLast: 1, keepWeeklyWeeks: 2 })).toEqual(ids([monday, sunday]));
  });

  test("weeks across a year's end follow the calendar (ISO week 1 of 2026 begins on Monday 2025-12-29)", () => {
    const now = Date.UTC(2026, 0, 2, 12); // Friday
    const newest = backup(now - HOUR);
    const wednesday = backup(Date.UTC(2025, 11, 31, 12)); // the same ISO week as now, though in 2025
    const sunday = backup(Date.UTC(2025, 11, 28, 12)); // the week before
    expect(keptOf([newest, wednesday, sunday], { keepLast: 1, keepWeeklyWeeks: 1 }, now)).toEqual(ids([newest]));
    expect(keptOf([newest, wednesday, sunday], { keepLast: 1, keepWeeklyWeeks: 2 }, now)).toEqual(ids([newest, sunday]));
  });
});

describe("the rules together", () => {
  test("a backup is kept when any rule keeps it", () => {
    // Hourly for 20 days.
    const backups = Array.from({ length: 20 * 24 }, (_, hours) => backup(NOW - hours * HOUR));
    const kept = keptOf(backups, { keepLast: 3, keepDailyDays: 7, keepWeeklyWeeks: 3 });
    const newestOfDay = (daysAgo: number) => backups.find((one) => one.createdAt < Date.UTC(2025, 5, 19 - daysAgo))!;
    const expected = new Set([
      ...ids(backups.slice(0, 3)),
      ...[0, 1, 2, 3, 4, 5, 6].map((daysAgo) => newestOfDay(daysAgo).id),
      // Newest of last week (Sunday the 15th, 23:00) and of the week before (Sunday the 8th, 23:00).
      newestOfDay(3).id,
      newestOfDay(10).id,
    ]);
    expect(new Set(kept)).toEqual(expected);
  });

  test("never deletes everything: the newest completed scheduled backup always stays", () => {
    const backups = [backup(NOW - 400 * DAY), backup(NOW - 500 * DAY)];
    expect(keptOf(backups, { keepLast: 1 })).toEqual(ids([backups[0]!]));
  });
});

describe("failed scheduled backups", () => {
  test("only the newest keepLast of them are kept, so a failing schedule's history stays bounded", () => {
    const failed = [1, 2, 3, 4].map((hours) => backup(NOW - hours * HOUR, { status: "failed" }));
    const plan = retentionPlan([backup(NOW), ...failed], policy({ keepLast: 2 }), NOW);
    expect(plan.failed.sort()).toEqual(ids(failed.slice(2)).sort());
    expect(plan.completed).toEqual([]);
  });

  test("failed manual backups are not a schedule's to delete", () => {
    const failed = [1, 2, 3].map((hours) => backup(NOW - hours * HOUR, { status: "failed", type: "manual" }));
    expect(retentionPlan(failed, policy({ keepLast: 1 }), NOW).failed).toEqual([]);
  });
});
