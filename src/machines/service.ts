// The machines the platform runs containers on, each with its own Docker driver. Today there is
// one, `local` (the engine at PLATFORM_DOCKER_HOST); drivers are keyed by machine so more
// engines can join later and placement can choose among them.
import type { Config } from "../config";
import { ApiError } from "../http/errors";
import { DockerDriver } from "../docker/driver";

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

  async describe() {
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
}
