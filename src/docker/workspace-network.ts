// One bridge network per workspace: its apps and databases reach each other there by alias, and
// nothing of another workspace is on it. Apps and databases both name it through here.
import { LABEL_MANAGED, LABEL_WORKSPACE } from "./container-spec";

export function workspaceNetworkName(workspaceId: string): string {
  return `platform-${workspaceId.toLowerCase()}`;
}

export function workspaceNetworkLabels(workspaceId: string): Record<string, string> {
  return { [LABEL_MANAGED]: "true", [LABEL_WORKSPACE]: workspaceId };
}
