// A database's row as the unit tests of the engines and their containers need it, without a
// platform database: credentials with every character a connection string or a shell could trip on.
import { ENGINES } from "../../src/databases/engines";
import type { DatabaseRow } from "../../src/databases/runtime";

export const PASSWORD = `p@ss:w/rd'"\\x`;
export const credentials = { username: "app_user", password: PASSWORD, databaseName: "app_db" };

export function databaseRowOf(engine: DatabaseRow["engine"], changes: Partial<DatabaseRow> = {}): DatabaseRow {
  return {
    id: "db_TEST",
    workspaceId: "ws_Test",
    name: "orders",
    engine,
    version: ENGINES[engine].defaultVersion,
    status: "provisioning",
    statusReason: null,
    cpus: null,
    memoryMB: 512,
    storageGB: 5,
    username: credentials.username,
    passwordCiphertext: "",
    databaseName: credentials.databaseName,
    machineId: "local",
    containerId: null,
    volumeName: "platform-db-db_TEST-data",
    hostPort: null,
    createdAt: 0,
    updatedAt: 0,
    ...changes,
  };
}
