// Schemas of /api/machines: what it answers, as named schemas of the OpenAPI document (src/http/responses.ts).
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { oneOf, ref, resource, timestamp } from "../http/responses";

export const machineIdParams = t.Object({ machineId: t.String({ minLength: 1, maxLength: 64 }) });

export const MachineSchema = resource(
  "Machine",
  {
    id: t.String({ description: "Use it as `machineId`; `local` is the platform's own engine and the automatic choice" }),
    status: oneOf(["online", "unreachable"] as const, "Whether its Docker engine answered just now"),
    dockerVersion: t.Nullable(t.String({ description: "The engine's version; null while unreachable" })),
    apiVersion: t.Nullable(t.String({ description: "The engine's API version; null while unreachable" })),
  },
  "A Docker engine the platform places apps and databases on.",
);

const labelledContainerFields = {
  machineId: t.String(),
  id: t.String({ description: "The container's id on its engine" }),
  name: t.String(),
  state: t.String({ description: "The engine's state of it: `running`, `exited`..." }),
};

export const UnknownContainerSchema = resource(
  "UnknownContainer",
  labelledContainerFields,
  "A container that carries the platform's label but belongs to no known app or database: reported, never deleted.",
);

export const RemovedContainerSchema = resource(
  "RemovedContainer",
  labelledContainerFields,
  "A container of a known app that its state did not have (neither serving nor being released), as it was when removed.",
);

export const ReconcileReportSchema = resource(
  "ReconcileReport",
  {
    at: timestamp("When the reconciliation ran"),
    unreachableMachines: t.Array(t.String(), { description: "Machines whose containers could not be listed" }),
    unknownContainers: t.Array(ref(UnknownContainerSchema), { description: "This workspace's only" }),
    removedContainers: t.Array(ref(RemovedContainerSchema), {
      description:
        "This workspace's only: containers of a known app that were neither its serving container nor one a release in progress is making " +
        "(left by a release or restart the platform was killed in), stopped and removed by the latest run that removed any " +
        "(kept until a run removes others)",
    }),
  },
  "The last reconciliation of the database with what the engines run.",
);

export const MACHINE_RESOURCES: (TSchema & { title: string })[] = [MachineSchema, UnknownContainerSchema, RemovedContainerSchema, ReconcileReportSchema];
