// One bridge network per workspace: its apps and databases reach each other there by alias, and
// nothing of another workspace is on it. Apps and databases both name it through here.
import { LABEL_MANAGED, LABEL_WORKSPACE } from "./container-spec";
import type { DockerDriver } from "./driver";

export function workspaceNetworkName(workspaceId: string): string {
  return `platform-${workspaceId.toLowerCase()}`;
}

export function workspaceNetworkLabels(workspaceId: string): Record<string, string> {
  return { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: workspaceId };
}

/**
 * Gives a workspace's network back once its last app or database is gone: each network holds
 * one of the engine's limited address pools (about 30 with Docker's defaults).
 */
export async function releaseWorkspaceNetwork(driver: DockerDriver, workspaceId: string): Promise<void> {
  await driver.removeNetworkIfUnused(workspaceNetworkName(workspaceId)).catch((error) => {
    console.warn(`[docker] could not remove the network of ${workspaceId}: ${(error as Error).message}`);
  });
}
