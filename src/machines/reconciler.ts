// Keeps the database in step with what the engines really run. At start and on a croner
// schedule it lists every container carrying the platform's label, hands each domain (apps,
// databases) the containers of its label so it can sync their status and retire those its state
// no longer has (the report lists them), and reports labelled containers that nobody knows. An
// unknown container is only reported, never deleted.
import { Cron } from "croner";
import { LABEL_MANAGED } from "../docker/container-spec";
import type { Machines } from "./service";

export interface ManagedContainer {
  machineId: string;
  id: string;
  name: string;
  state: string;
  labels: Record<string, string>;
}

/** A domain whose resources own containers, found by one label (e.g. platform.app). */
export interface ContainerOwner {
  label: string;
  /** Records the live state of the given containers; returns the label values it knows. */
  sync(containers: ManagedContainer[]): Set<string> | Promise<Set<string>>;
  /** Stops and removes those of the given containers (each of a known resource) that its state does not have; returns them. */
  retire?(containers: ManagedContainer[]): Promise<ManagedContainer[]>;
}

export interface ReconcileReport {
  at: string;
  unknownContainers: ManagedContainer[];
  /**
   * Containers of known resources that their state did not have, removed by the latest run that
   * removed any: kept in the reports that follow until a run removes others.
   */
  removedContainers: ManagedContainer[];
  unreachableMachines: string[];
}

export class Reconciler {
  private readonly owners: ContainerOwner[] = [];
  private job: Cron | null = null;
  lastReport: ReconcileReport | null = null;
  private running: Promise<ReconcileReport> | null = null;

  constructor(private readonly machines: Machines) {}

  register(owner: ContainerOwner) {
    this.owners.push(owner);
  }

  /** One run at a time: asked while one runs (at start, on the schedule, on request), the caller shares it and its report. */
  run(): Promise<ReconcileReport> {
    this.running ??= this.runOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async runOnce(): Promise<ReconcileReport> {
    const containers: ManagedContainer[] = [];
    const unreachableMachines: string[] = [];
    for (const machineId of this.machines.ids()) {
      try {
        const listed = await this.machines.get(machineId).listContainers({ [LABEL_MANAGED]: "true" });
        containers.push(...listed.map((container) => ({ machineId, ...container })));
      } catch {
        unreachableMachines.push(machineId);
      }
    }
    const claimed = new Set<ManagedContainer>();
    const removedContainers: ManagedContainer[] = [];
    for (const owner of this.owners) {
      const owned = containers.filter((container) => container.labels[owner.label] !== undefined);
      const known = await owner.sync(owned);
      const ownedKnown = owned.filter((container) => known.has(container.labels[owner.label]!));
      for (const container of ownedKnown) claimed.add(container);
      if (owner.retire) removedContainers.push(...(await owner.retire(ownedKnown)));
    }
    const unknownContainers = containers.filter((container) => !claimed.has(container));
    for (const container of unknownContainers) {
      console.warn(`[reconciler] container ${container.name} (${container.id.slice(0, 12)}) on ${container.machineId} carries the platform label but is not known; left in place`);
    }
    this.lastReport = {
      at: new Date().toISOString(),
      unknownContainers,
      removedContainers: removedContainers.length > 0 ? removedContainers : (this.lastReport?.removedContainers ?? []),
      unreachableMachines,
    };
    return this.lastReport;
  }

  /** Runs now and then on the schedule; a tick while a run is under way shares it. */
  start(schedule: string) {
    void this.run().catch((error) => console.error("[reconciler]", error));
    this.job = new Cron(schedule, { protect: true }, () => this.run().then(() => undefined, (error) => console.error("[reconciler]", error)));
  }

  stop() {
    this.job?.stop();
  }
}
