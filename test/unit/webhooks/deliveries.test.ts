// The replay memory of webhook deliveries: a delivery id or a body seen by the same webhook within
// a day is a replay; after a day, or at another webhook, it is new.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../../src/db";
import { DELIVERY_MEMORY_MS, firstDelivery } from "../../../src/webhooks/deliveries";
import { tempDir } from "../../helpers/temp";

const db = openDatabase(join(tempDir(), "platform.db"));
const body = (text: string) => new TextEncoder().encode(text);
const start = Date.parse("2030-01-01T00:00:00Z");

test("the same delivery id, or the same body under a new id, is a replay for a day", () => {
  expect(firstDelivery(db, "app_a", "id-1", body("push one"), start)).toBe(true);
  expect(firstDelivery(db, "app_a", "id-1", body("push two"), start + 1000)).toBe(false);
  expect(firstDelivery(db, "app_a", "id-2", body("push one"), start + 1000)).toBe(false);
  expect(firstDelivery(db, "app_a", "id-2", body("push two"), start + 2000)).toBe(true);
  expect(firstDelivery(db, "app_a", "id-1", body("push one"), start + DELIVERY_MEMORY_MS - 1)).toBe(false);
});

test("another webhook keeps its own memory", () => {
  expect(firstDelivery(db, "app_b", "id-1", body("push one"), start + 3000)).toBe(true);
});

test("after a day a delivery is forgotten, and the memory holds no older rows", () => {
  const later = start + DELIVERY_MEMORY_MS + 10_000;
  expect(firstDelivery(db, "app_a", "id-1", body("push one"), later)).toBe(true);
  expect(db.$client.query("SELECT count(*) AS n FROM webhook_deliveries WHERE received_at < ?").get(later - DELIVERY_MEMORY_MS)).toEqual({ n: 0 });
});
