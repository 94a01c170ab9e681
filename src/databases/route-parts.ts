// What the routes of /api/databases share: how an operation and its actor are described and answered.
import { t } from "elysia";
import { auditActor, type Principal } from "../http/auth";
import { ref } from "../http/responses";
import { DatabaseSchema, OperationSchema } from "./model";

export const OPERATION =
  "`operationId` and `operation` (id, type, status `pending` -> `running` -> `succeeded` | `failed`, error, actor, startedAt, finishedAt).";
/** What the routes that begin an operation answer. */
export const WITH_OPERATION = {
  database: ref(DatabaseSchema),
  operationId: t.String({ description: "The operation begun, in the history (GET operations)" }),
  operation: ref(OperationSchema),
};
export function actorOf(principal: Principal) {
  const actor = auditActor(principal);
  return { type: actor.type, id: actor.id };
}
