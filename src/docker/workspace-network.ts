// One bridge network per workspace: its apps and databases reach each other there by alias, and
// nothing of another workspace is on it. Apps and databases both make it through here, so every
// workspace bridge gets a host interface named `plw-…`: the egress rules (./egress.ts) match
// `-i plw+` to keep containers away from the platform's ports and the metadata address.
import { createHash } from "node:crypto";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "./container-spec";
import type { DockerDriver } from "./driver";

/** Prefix of every workspace bridge's host interface; iptables matches it as `plw+`. */
export const WORKSPACE_BRIDGE_PREFIX = "plw-";

export function workspaceNetworkName(workspaceId: string): string {
  return `platform-${workspaceId.toLowerCase()}`;
}

export function workspaceNetworkLabels(workspaceId: string): Record<string, string> {
  return { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: workspaceId };
}

/** The bridge's interface name: Linux allows 15 characters, so the prefix and 11 hex digits of a hash. */
export function workspaceBridgeName(workspaceId: string): string {
  return WORKSPACE_BRIDGE_PREFIX + createHash("sha256").update(workspaceId).digest("hex").slice(0, 11);
}

/** Makes the workspace's network unless it exists; answers its name. */
export async function ensureWorkspaceNetwork(driver: DockerDriver, workspaceId: string): Promise<string> {
  const name = workspaceNetworkName(workspaceId);
  await driver.ensureNetwork(name, workspaceNetworkLabels(workspaceId), {
    "com.docker.network.bridge.name": workspaceBridgeName(workspaceId),
  });
  return name;
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
