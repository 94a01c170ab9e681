// A DatabaseService on a real SQLite file in a temp data dir, holding one running PostgreSQL
// database `db_1` of workspace `ws_1`: what the unit tests of backups and restores start from.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { SecretBox } from "../../src/crypto/secrets";
import { openDatabase } from "../../src/db";
import { databases, workspaces } from "../../src/db/schema";
import type { DockerDriver } from "../../src/docker/driver";
import { DatabaseService } from "../../src/databases/service";
import { Machines } from "../../src/machines/service";
import { tempDir } from "./temp";

export function serviceWithOneDatabase(driver?: unknown) {
  const dataDir = tempDir();
  const db = openDatabase(join(dataDir, "platform.sqlite"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  const secrets = new SecretBox(randomBytes(32));
  const drivers = new Map(driver ? [["local", driver as DockerDriver]] : []);
  const service = new DatabaseService({ db, machines: new Machines(drivers), secrets, config: loadConfig({}) });
  db.insert(databases)
    .values({
      id: "db_1", workspaceId: "ws_1", name: "orders", engine: "postgresql", version: "17", status: "running", memoryMB: 256, storageGB: 1,
      username: "app_user", passwordCiphertext: secrets.encrypt("a-long-password", "db_1"), databaseName: "app_db", machineId: "local",
      volumeName: "platform-db-db_1-data", hostPort: 15_432, createdAt: 0, updatedAt: 0,
    })
    .run();
  return { dataDir, db, service };
}
