// The machines the platform runs containers on, each with its own Docker driver. Today there is
// one, `local` (the engine at PLATFORM_DOCKER_HOST); drivers are keyed by machine so more
// engines can join later and placement can choose among them.
import type { Static } from "@sinclair/typebox";
import type { Config } from "../config";
import { ApiError } from "../http/errors";
import { DockerDriver } from "../docker/driver";
import { LABEL_WORKSPACE } from "../docker/container-spec";
import type { MachineSchema, ReconcileReportSchema } from "./model";
import type { ReconcileReport } from "./reconciler";

type Machine = Static<typeof MachineSchema>;

export const LOCAL_MACHINE_ID = "local";

export class Machines {
  constructor(private readonly drivers: Map<string, DockerDriver>) {}

  static fromConfig(config: Config, env: Record<string, string | undefined> = process.env): Machines {
    const local = new DockerDriver(LOCAL_MACHINE_ID, {
      host: config.dockerHost,
      tlsCertPath: env.PLATFORM_DOCKER_CERT_PATH || env.DOCKER_CERT_PATH || undefined,
    });
    return new Machines(new Map([[LOCAL_MACHINE_ID, local]]));
  }

  ids(): string[] {
    return [...this.drivers.keys()];
  }

  get(machineId: string): DockerDriver {
    const driver = this.drivers.get(machineId);
    if (!driver) throw new ApiError("UNKNOWN_MACHINE", `Unknown machineId '${machineId}'; known machines: ${this.ids().join(", ")}`);
    return driver;
  }

  /** The machine a new app or database goes to: the one asked for, else the automatic choice. */
  place(machineId: string | undefined): DockerDriver {
    return machineId === undefined || machineId === "" ? this.get(LOCAL_MACHINE_ID) : this.get(machineId);
  }

  /** Every machine, each pinged: `unreachable` when its engine does not answer. */
  async describe(): Promise<Machine[]> {
    return Promise.all(
      [...this.drivers.values()].map(async (driver) => {
        try {
          const { version, apiVersion } = await driver.ping();
          return { id: driver.machineId, status: "online" as const, dockerVersion: version, apiVersion };
        } catch {
          return { id: driver.machineId, status: "unreachable" as const, dockerVersion: null, apiVersion: null };
        }
      }),
    );
  }

  /** One machine, pinged: NOT_FOUND when unknown, DOCKER_UNAVAILABLE or DOCKER_TIMEOUT when its engine does not answer. */
  async check(machineId: string): Promise<Machine> {
    if (!this.drivers.has(machineId)) throw new ApiError("NOT_FOUND", `Machine '${machineId}' not found`);
    const driver = this.get(machineId);
    const { version, apiVersion } = await driver.ping();
    return { id: driver.machineId, status: "online", dockerVersion: version, apiVersion };
  }
}

function ofWorkspace(containers: ReconcileReport["unknownContainers"], workspaceId: string) {
  return containers
    .filter((container) => container.labels[LABEL_WORKSPACE] === workspaceId)
    .map(({ machineId, id, name, state }) => ({ machineId, id, name, state }));
}

/** A reconciliation as one workspace sees it: only its own strays, since other workspaces' container names are theirs to see. */
export function reportForWorkspace(report: ReconcileReport | null, workspaceId: string): Static<typeof ReconcileReportSchema> | null {
  return (
    report && {
      at: report.at,
      unreachableMachines: report.unreachableMachines,
      unknownContainers: ofWorkspace(report.unknownContainers, workspaceId),
      removedContainers: ofWorkspace(report.removedContainers, workspaceId),
    }
  );
}
