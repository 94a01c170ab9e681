// The memory of accepted webhook deliveries, a day long: GitHub may deliver again (its "redeliver"
// button, retries) and anyone who saw a signed delivery may send it again. X-GitHub-Delivery is not
// covered by the signature, so a replay is known by its delivery id or by its body's digest: every
// real push has a body of its own (its before and after commits).
import { and, eq, lt, or } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { webhookDeliveries } from "../db/schema";

export const DELIVERY_MEMORY_MS = 24 * 60 * 60_000;

/**
 * Records a delivery whose signature was checked; false when the same delivery id or body came
 * to the same webhook within the last day (a replay: nothing is done for it again). Only signed
 * deliveries get here, so the memory holds at most a day of the webhooks' real traffic.
 */
export function firstDelivery(db: PlatformDb, scope: string, deliveryId: string, body: Uint8Array, now = Date.now()): boolean {
  const bodySha256 = new Bun.CryptoHasher("sha256").update(body).digest("hex");
  return db.transaction((tx) => {
    tx.delete(webhookDeliveries).where(lt(webhookDeliveries.receivedAt, now - DELIVERY_MEMORY_MS)).run();
    const seen = tx
      .select({ scope: webhookDeliveries.scope })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.scope, scope), or(eq(webhookDeliveries.deliveryId, deliveryId), eq(webhookDeliveries.bodySha256, bodySha256))))
      .get();
    if (seen) return false;
    tx.insert(webhookDeliveries).values({ scope, deliveryId, bodySha256, receivedAt: now }).run();
    return true;
  });
}
