// Whether a subdomain the proxy has no route for belongs to an app all the same (stopped, crashed,
// never released): the proxy then says "not running" (503) rather than "no such app" (404).
import { eq } from "drizzle-orm";
import type { PlatformDb } from "../db";
import { apps } from "../db/schema";
import type { UnroutedApp } from "../proxy/routes";

export function unroutedAppOf(db: PlatformDb, subdomain: string): UnroutedApp | undefined {
  const app = db.select({ status: apps.status }).from(apps).where(eq(apps.subdomain, subdomain)).get();
  return app && app.status !== "deleting" ? app : undefined;
}
