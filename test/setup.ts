// Preloaded by `bun test` (bunfig.toml): sets the tests' timeout, selects the stand-in images,
// and checks after the whole run that the tests left nothing behind on this machine. Whatever a
// test server made in Docker (containers, volumes, networks, app images of its workspaces) and is still there
// fails the run, and is removed so the next run starts clean; then the temp dirs go.
import { afterAll, setDefaultTimeout } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { madeTempDirs, removeTempDirs } from "./helpers/temp";
import { useStandInImages } from "./helpers/stand-ins";
import { buildDashboard, dashboardStale } from "../scripts/build-dashboard";

type Kind = "container" | "volume" | "network" | "image";

// Integration tests start real servers and containers. bunfig.toml's `timeout` is not applied by
// this Bun (tests and hooks were cut at the default 5 s), so the preload sets it.
setDefaultTimeout(120_000);

// Test servers run from source and serve the built dashboard: built again when static/ui changed.
if (dashboardStale()) await buildDashboard();

// Workspace networks the run made are removed at the end (the engine refuses while one is in
// use): each holds one of the engine's ~30 address pools, and workspaces of tests are many.
const networksBefore = new Set(labelled("network").map((network) => network.id));

afterAll(() => {
  // Only the workspaces of this run's test servers: other runs may share the engine, and what they
  // make is theirs to judge (tests driving the engine directly remove what they make by id).
  const workspaces = new Set(madeTempDirs().flatMap(workspacesOfDataDir));
  const leftovers = (["container", "image", "volume", "network"] as const).flatMap((kind) =>
    labelled(kind).filter((resource) => workspaces.has(resource.workspace)).map((resource) => ({ kind, ...resource })),
  );
  for (const { kind, id } of leftovers) remove(kind, id);
  const madeNetworks = labelled("network").filter((network) => !networksBefore.has(network.id)).map((network) => network.id);
  if (madeNetworks.length) Bun.spawnSync(["docker", "network", "rm", ...madeNetworks], { stdout: "ignore", stderr: "ignore" });
  removeTempDirs();
  if (leftovers.length) {
    const list = leftovers.map(({ kind, name, workspace }) => `${kind} ${name} (workspace ${workspace})`).join("\n  ");
    throw new Error(`Tests left ${leftovers.length} labelled Docker resource(s) behind (now removed):\n  ${list}`);
  }
});

function workspacesOfDataDir(dir: string): string[] {
  const file = join(dir, "platform.sqlite");
  if (!existsSync(file)) return [];
  const db = new Database(file, { readonly: true });
  try {
    return db.query<{ id: string }, []>("SELECT id FROM workspaces").all().map((row) => row.id);
  } catch {
    return [];
  } finally {
    db.close();
  }
}

/** Resources carrying platform.managed, with the workspace they belong to. */
function labelled(kind: Kind): { id: string; name: string; workspace: string }[] {
  if (kind === "image") return labelledImages();
  const format = `{{${kind === "volume" ? ".Name" : ".ID"}}}\t{{${kind === "container" ? ".Names" : ".Name"}}}\t{{.Label "platform.workspace"}}`;
  const args = kind === "container" ? ["ps", "-a"] : [kind, "ls"];
  const listed = Bun.spawnSync(["docker", ...args, "--filter", "label=platform.managed=true", "--format", format], { stderr: "ignore" });
  if (listed.exitCode !== 0) return [];
  return resourcesOf(listed.stdout.toString());
}

/** `docker image ls` has no per-label column: the workspace comes from one inspect of them all. */
function labelledImages(): { id: string; name: string; workspace: string }[] {
  const listed = Bun.spawnSync(["docker", "image", "ls", "-q", "--no-trunc", "--filter", "label=platform.managed=true"], { stderr: "ignore" });
  const ids = [...new Set(listed.stdout.toString().split("\n").filter(Boolean))];
  if (listed.exitCode !== 0 || ids.length === 0) return [];
  const format = '{{.Id}}\t{{range .RepoTags}}{{.}} {{end}}\t{{index .Config.Labels "platform.workspace"}}';
  const inspected = Bun.spawnSync(["docker", "image", "inspect", "-f", format, ...ids], { stderr: "ignore" });
  return resourcesOf(inspected.stdout.toString());
}

/** Lines of `id<TAB>name<TAB>workspace`, as the formats above print them. */
function resourcesOf(listing: string): { id: string; name: string; workspace: string }[] {
  return listing
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [id = "", name = "", workspace = ""] = line.split("\t");
      return { id, name, workspace };
    });
}

function remove(kind: Kind, id: string) {
  const command =
    kind === "container" ? ["rm", "-f", "-v", id]
    : kind === "image" ? ["image", "rm", "-f", id]
    : kind === "volume" ? ["volume", "rm", "-f", id]
    : ["network", "rm", id];
  Bun.spawnSync(["docker", ...command], { stdout: "ignore", stderr: "ignore" });
}

useStandInImages();

// Servers of tests leave the host's iptables alone (test/integration/docker/egress.test.ts turns
// the egress firewall on for itself): parallel test servers would otherwise replace each other's rules.
process.env.PLATFORM_EGRESS_FIREWALL ??= "off";
