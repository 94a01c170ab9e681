// The platform is killed (SIGKILL) at the steps of a release where a crash used to leave orphans:
// while a redeploy's new container starts, right after the switch, and while the restart an env
// change triggers starts its container. PLATFORM_TEST_PAUSE_AT (test-only) makes the server log
// `test pause at <step>` and wait there. After a restart on the same data dir the app has exactly
// the container it serves from, the build rows say what really happened, the reconciliation report
// lists what it removed, and the app answers with the env last acknowledged.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli } from "../../helpers/docker";

/** During a paused release the reconciler runs every second: it must leave the release's container alone. */
const EVERY_SECOND = "* * * * * *";
/** After the restart only the start-up reconciliation runs, so its report is the one read. */
const ONCE_A_YEAR = "0 0 0 1 1 *";

let server: TestServer;
let key: string;
let appId: string;
let subdomain: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_RECONCILE_SCHEDULE: ONCE_A_YEAR });
  key = (await server.createKey("crash-recovery")).key;
});
afterAll(async () => {
  if (appId) {
    await server.request("DELETE", `/api/apps/${appId}`, { key });
    await waitUntil(async () => (await server.request("GET", `/api/apps/${appId}`, { key })).status === 404, 30_000);
  }
  await server.stop();
});

/** An app that answers with its code's version and the env variable GREETING. */
const versioned = (version: string) =>
  appZip({
    "package.json": JSON.stringify({ name: "phoenix", scripts: { start: "node server.js" } }),
    "server.js": `require("http").createServer((req, res) => res.end("${version}:" + (process.env.GREETING ?? "-"))).listen(process.env.PORT);\n`,
  });

async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(200)) if (await check()) return true;
  return false;
}

/** The app's containers on the engine: id and the build each was made of. */
async function containers(): Promise<{ id: string; build: string }[]> {
  const listed = await dockerCli("ps", "-a", "--no-trunc", "--filter", `label=platform.app=${appId}`, "--format", '{{.ID}} {{.Label "platform.build"}}');
  return listed
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [id, build] = line.split(" ");
      return { id: id!, build: build! };
    });
}

async function served(): Promise<string> {
  const answer = await viaProxy(server, subdomain).catch(() => null);
  return answer?.status === 200 ? answer.text() : `status ${answer?.status}`;
}

/** Restarts the server paused at `step`, runs `trigger`, kills the server there, and starts it again on the same data dir. */
async function killAt(step: string, trigger: () => Promise<void>, whilePaused: () => Promise<void>) {
  await server.stop();
  Object.assign(server.env, { PLATFORM_TEST_PAUSE_AT: step, PLATFORM_RECONCILE_SCHEDULE: EVERY_SECOND });
  await server.boot();
  await trigger();
  expect(await waitUntil(() => server.output.includes(`test pause at ${step}`), 120_000)).toBe(true);
  await Bun.sleep(2_500); // two reconciliations run while the release is paused
  await whilePaused();
  await server.stop("SIGKILL");
  Object.assign(server.env, { PLATFORM_TEST_PAUSE_AT: "", PLATFORM_RECONCILE_SCHEDULE: ONCE_A_YEAR });
  await server.boot();
}

/** After the restart: waits until one container is left and the app answers `answer`; returns that container. */
async function settlesOn(answer: string) {
  await waitUntil(async () => (await containers()).length === 1 && (await served()) === answer, 60_000);
  expect({ containers: (await containers()).length, served: await served() }).toEqual({ containers: 1, served: answer });
  return (await containers())[0]!;
}

async function removedByReconciliation(): Promise<string[]> {
  const { reconcile } = (await server.request("GET", "/api/machines/", { key })).body;
  return (reconcile?.removedContainers ?? []).map((container: { id: string }) => container.id);
}

const PHOENIX = { name: "phoenix", runtime: "node", memoryMB: "64" };

/** Deploys `version` of the app again: the new build's id. */
async function redeploy(version: string): Promise<string> {
  const deployed = await deployZip(server, key, PHOENIX, versioned(version));
  expect(deployed.status).toBe(202);
  return deployed.body.buildId;
}

const build = async (buildId: string) => (await server.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key })).body.build;

test("SIGKILL while a redeploy's new container starts: that container is removed, its build is marked interrupted", async () => {
  const first = await deployZip(server, key, PHOENIX, versioned("v1"));
  expect(first.status).toBe(202);
  appId = first.body.app.id;
  const running = await waitForStatus(server, key, appId, ["running", "failed"]);
  expect(running).toMatchObject({ status: "running" }); // on failure, the statusReason shows why
  subdomain = running.subdomain;

  let redeployId = "";
  let orphan = "";
  await killAt(
    "release.started",
    async () => void (redeployId = await redeploy("v2")),
    async () => {
      // The serving container and the one being released: the reconciler left the new one alone.
      const both = await containers();
      expect(both).toHaveLength(2);
      orphan = both.find((container) => container.build === redeployId)!.id;
    },
  );

  const left = await settlesOn("v1:-");
  expect(left.id).not.toBe(orphan);
  expect(await build(redeployId)).toMatchObject({ status: "failed", error: "interrupted by a platform restart" });
  expect((await waitForStatus(server, key, appId, ["running"])).status).toBe("running");
  expect(await removedByReconciliation()).toContain(orphan);
});

test("SIGKILL right after the switch: the previous container is removed, the new one serves", async () => {
  const previous = (await containers())[0]!.id;
  let redeployId = "";
  await killAt(
    "release.switched",
    async () => void (redeployId = await redeploy("v3")),
    async () => expect((await containers()).map((container) => container.id)).toContain(previous),
  );

  const left = await settlesOn("v3:-");
  expect(left.build).toBe(redeployId);
  expect(await build(redeployId)).toMatchObject({ status: "succeeded" });
  expect(await removedByReconciliation()).toContain(previous);
});

test("SIGKILL during the restart an env change triggers: no orphan, and the app serves the acknowledged env", async () => {
  const before = (await containers())[0]!.id;
  let orphan = "";
  await killAt(
    "release.started",
    async () => {
      const changed = await server.request("PUT", `/api/apps/${appId}/env`, { key, body: { envVars: { GREETING: "hello" } } });
      expect(changed).toMatchObject({ status: 200, body: { restarted: true } });
    },
    async () => {
      const serving = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
      expect(serving.status).toBe("starting");
      const both = await containers();
      expect(both).toHaveLength(2);
      orphan = both.find((container) => container.id !== before)!.id;
    },
  );

  const left = await settlesOn("v3:hello");
  expect(left.id).not.toBe(orphan);
  expect(await removedByReconciliation()).toContain(orphan);
  expect((await waitForStatus(server, key, appId, ["running"])).status).toBe("running");
});
