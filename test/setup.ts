// Preloaded by `bun test` (bunfig.toml): selects the stand-in images, and cleans up after the
// whole run what tests leave on this machine (temp dirs, Docker networks).
import { afterAll } from "bun:test";
import { removeTempDirs } from "./helpers/temp";
import { useStandInImages } from "./helpers/stand-ins";

afterAll(removeTempDirs);

// Workspace networks the run made are removed at the end (the engine refuses while one is in
// use): each holds one of the engine's ~30 address pools, and workspaces of tests are many.
const networksBefore = new Set(platformNetworks());
afterAll(() => {
  const made = platformNetworks().filter((network) => !networksBefore.has(network));
  if (made.length) Bun.spawnSync(["docker", "network", "rm", ...made], { stdout: "ignore", stderr: "ignore" });
});

function platformNetworks(): string[] {
  const listed = Bun.spawnSync(["docker", "network", "ls", "-q", "--filter", "label=platform.managed=true"], { stderr: "ignore" });
  return listed.exitCode === 0 ? listed.stdout.toString().split("\n").filter(Boolean) : [];
}

useStandInImages();
