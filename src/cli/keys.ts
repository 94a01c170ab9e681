// `platform keys create --name NAME [--workspace NAME]`: makes a key straight in the data dir,
// with no server running, so a headless install can get its first key. The key acts only in that
// workspace, held by the workspace's owner (a placeholder of its own for a workspace made here).
import type { Config } from "../config";
import { openDatabase } from "../db";
import { createApiKey } from "../api-keys/service";
import { ensureWorkspaceWithOwner } from "../workspaces/service";

export function parseFlags(args: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (!arg.startsWith("--")) throw new Error(`unexpected argument "${arg}"`);
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined];
    const value = inline ?? args[++index];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    flags[name] = value;
  }
  return flags;
}

export function createKeyFromCli(config: Config, args: string[]): { id: string; key: string; workspaceId: string } {
  const flags = parseFlags(args);
  const name = flags.name?.trim();
  if (!name || name.length > 100) throw new Error("--name is required (1 to 100 characters)");
  const workspaceName = (flags.workspace ?? "default").trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,62}$/.test(workspaceName)) {
    throw new Error("--workspace must be 1-63 letters, digits, spaces, dots, dashes or underscores");
  }
  const db = openDatabase(config.databaseFile);
  try {
    const { workspace, ownerId } = ensureWorkspaceWithOwner(db, workspaceName);
    const { key, apiKey } = createApiKey(
      db,
      { workspaceId: workspace.id, userId: ownerId },
      { name },
      { type: "cli", id: null },
    );
    return { id: apiKey.id, key, workspaceId: workspace.id };
  } finally {
    db.$client.close();
  }
}
