// Password rotation inside the engine itself. The engine is asked to change the password
// (authenticated with the current one); whatever password the engine then accepts is stored, so
// the platform never loses track of it; the operation only succeeds once every account that held
// the old password accepts the new one and refuses the old one.
import { ApiError } from "../http/errors";
import { randomBase62 } from "../crypto/tokens";
import type { OperationActor } from "./operations";
import { containerNameOf, problemOf, runCommand, writeConfigFiles, type DatabaseTarget } from "./runtime";
import type { DatabaseService } from "./service";

const GENERATED_PASSWORD_LENGTH = 32;

/** The probe of every account that holds the database password, run with `password`. */
async function probeAccounts(target: DatabaseTarget, containerId: string, password: string, secrets: string[]) {
  const results = [];
  for (const probe of target.definition.passwordProbes({ ...target.credentials, password })) {
    results.push(await runCommand(target, containerId, probe, secrets));
  }
  return results;
}

async function rotateInEngine(service: DatabaseService, target: DatabaseTarget, newPassword: string) {
  const { definition, credentials, row } = target;
  const oldPassword = credentials.password;
  const secrets = [oldPassword, newPassword];
  const containerId = containerNameOf(row.id);

  const rotation = await runCommand(target, containerId, definition.rotatePassword(credentials, newPassword), secrets);
  const primary = await runCommand(target, containerId, definition.readinessProbe({ ...credentials, password: newPassword }), secrets);
  if (primary.ok) {
    service.update(row.id, { passwordCiphertext: service.secrets.encrypt(newPassword, row.id) });
    // Engines that read a config file at start (Redis) must find the new password there too.
    await writeConfigFiles({ ...target, credentials: { ...credentials, password: newPassword } }, containerId);
  }
  if (!rotation.ok) throw new Error(`${definition.title} refused the change: ${problemOf(rotation)}`);
  if (!primary.ok) throw new Error(`${definition.title} reported the change but refuses the new password: ${problemOf(primary)}`);

  for (const result of await probeAccounts(target, containerId, newPassword, secrets)) {
    if (!result.ok) throw new Error(`An account that held the old password refuses the new one: ${problemOf(result)}`);
  }
  for (const result of await probeAccounts(target, containerId, oldPassword, secrets)) {
    if (result.ok) throw new Error(`${definition.title} still accepts the old password`);
  }
}

/** Answers at once with the operation; GET /api/databases/{id} shows the new connection string once it succeeded. */
export function rotatePassword(service: DatabaseService, workspaceId: string, databaseId: string, password: string | undefined, actor: OperationActor) {
  const row = service.find(workspaceId, databaseId);
  const target = service.targetOf(row);
  const newPassword = password ?? randomBase62(GENERATED_PASSWORD_LENGTH);
  if (newPassword === target.credentials.password) {
    throw new ApiError("VALIDATION_FAILED", "The new password must differ from the current one");
  }
  if (row.status !== "running" && !service.operations.isBusy(row.id)) {
    throw new ApiError("NOT_RUNNING", `The database is ${row.status}; the password is changed inside the engine, so start it first`);
  }
  const operation = service.operations.begin(row, "rotate-password", actor);
  service.track(operation.run(() => rotateInEngine(service, target, newPassword)));
  return { database: service.view(row, { masked: false }), operationId: operation.id };
}
