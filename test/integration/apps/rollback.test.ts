// Rollback on the real engine: an earlier build released again from its kept image, within
// seconds, with no build step and no failed request at the public proxy meanwhile; its entry is
// `building` until the release serves, `failed` when the release fails, `canceled` when a stop
// preempts it, failed after a platform restart interrupts it; the refusals; and, with
// PLATFORM_APP_IMAGES_KEPT=1, older images removed from the engine, which makes a ZIP build
// impossible to roll back to.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { localDriver } from "../../helpers/docker";
import { LABEL_BUILD } from "../../../src/docker/container-spec";

let server: TestServer;
let key: string;
/** Keeps one image per app. */
let keepingOne: TestServer;
let keepingOneKey: string;

beforeAll(async () => {
  [server, keepingOne] = await Promise.all([TestServer.start(), TestServer.start({ PLATFORM_APP_IMAGES_KEPT: "1" })]);
  key = (await server.createKey("rollback")).key;
  keepingOneKey = (await keepingOne.createKey("rollback")).key;
});
afterAll(async () => {
  await Promise.all([deleteAllApps(server, key), deleteAllApps(keepingOne, keepingOneKey)]);
  await Promise.all([server.stop(), keepingOne.stop()]);
}, 60_000);

/** Deploys `name` (a static site answering `site`, or that ZIP) and waits until that build serves. */
async function deployVersion(on: TestServer, apiKey: string, name: string, site: string | Uint8Array<ArrayBuffer>) {
  const zip = typeof site === "string" ? appZip({ "index.html": site }) : site;
  const response = await deployZip(on, apiKey, { name, runtime: "node", memoryMB: "64" }, zip);
  expect(response.status).toBe(202);
  const buildId = response.body.buildId as string;
  const deadline = Date.now() + 120_000;
  let app: any;
  while (Date.now() < deadline) {
    app = await waitForStatus(on, apiKey, response.body.app.id, ["running", "failed"]);
    if (app.currentBuildId === buildId) return { app, buildId };
    await Bun.sleep(200);
  }
  throw new Error(`build ${buildId} of ${name} never served: ${JSON.stringify(app)}`);
}

const getBuild = async (on: TestServer, apiKey: string, appId: string, buildId: string) =>
  (await on.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key: apiKey })).body;

const rollback = (on: TestServer, apiKey: string, appId: string, buildId: string) =>
  on.request("POST", `/api/apps/${appId}/builds/${buildId}/rollback`, { key: apiKey });

/** Polls the build until it has ended; answers it and its log. */
async function finishedBuild(appId: string, buildId: string, timeoutMs = 90_000) {
  let found: any;
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await Bun.sleep(200)) {
    found = await getBuild(server, key, appId, buildId);
    if (!["queued", "building"].includes(found.build.status)) return found;
  }
  throw new Error(`build ${buildId} did not end: ${JSON.stringify(found?.build)}`);
}

/**
 * A node app answering "moody <version>". With MOODY_V1=exit the first version exits before it
 * listens; with MOODY_V1=slow it listens only after two minutes. Later versions ignore MOODY_V1.
 */
const moody = (version: number) =>
  appZip({
    "package.json": JSON.stringify({ name: "moody", scripts: { start: "node server.js" } }),
    "server.js":
      (version === 1 ? 'if (process.env.MOODY_V1 === "exit") process.exit(3);\nconst delayMs = process.env.MOODY_V1 === "slow" ? 120000 : 0;\n' : "const delayMs = 0;\n") +
      `setTimeout(() => require("http").createServer((req, res) => res.end("moody ${version}")).listen(process.env.PORT), delayMs);\n`,
  });

/** The containers, running or not, the platform made for the build. */
const containersOfBuild = (buildId: string) => localDriver().listContainers({ [LABEL_BUILD]: buildId });

/** Deploys moody 1 then moody 2 as `name`, sets MOODY_V1 (moody 2 restarts, unchanged) and waits until moody 2 serves again. */
async function moodyAppWith(name: string, mode: string) {
  const v1 = await deployVersion(server, key, name, moody(1));
  const v2 = await deployVersion(server, key, name, moody(2));
  const before = (await containersOfBuild(v2.buildId)).map((container) => container.id);
  const put = await server.request("PUT", `/api/apps/${v1.app.id}/env`, { key, body: { envVars: { MOODY_V1: mode } } });
  expect(put.body.restarted).toBe(true);
  let app: any;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(200)) {
    app = (await server.request("GET", `/api/apps/${v1.app.id}`, { key })).body.app;
    const serving = await containersOfBuild(v2.buildId);
    if (app.status === "running" && serving.length === 1 && !before.includes(serving[0]!.id)) break;
  }
  expect(app).toMatchObject({ status: "running", currentBuildId: v2.buildId });
  expect(await (await viaProxy(server, app.subdomain)).text()).toBe("moody 2");
  return { app, v1BuildId: v1.buildId, v2BuildId: v2.buildId };
}

/** Polls the rollback entry's log until its container has been started. */
async function untilReleaseStarted(appId: string, buildId: string) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(100)) {
    if ((await getBuild(server, key, appId, buildId)).log.includes("==> Starting container")) return;
  }
  throw new Error(`the release of ${buildId} never started a container`);
}

/** Asks the app through the proxy, one request after another, until stopped; answers every status and body. */
function pollThroughProxy(subdomain: string) {
  const answers: { status: number; text: string }[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      try {
        const response = await viaProxy(server, subdomain);
        answers.push({ status: response.status, text: await response.text() });
      } catch (error) {
        answers.push({ status: 0, text: String(error) });
      }
      await Bun.sleep(20);
    }
  })();
  return {
    answers,
    stop: async () => {
      running = false;
      await done;
      return answers;
    },
  };
}

describe("rollback from a kept image", () => {
  test("the first build serves again within seconds, with no build step, and no request fails meanwhile", async () => {
    const v1 = await deployVersion(server, key, "rolled", "version one");
    const v1Build = (await getBuild(server, key, v1.app.id, v1.buildId)) as any;
    expect(v1Build.log).toContain("==> Building image");
    const v2 = await deployVersion(server, key, "rolled", "version two");
    expect(await (await viaProxy(server, v2.app.subdomain)).text()).toBe("version two");

    const poller = pollThroughProxy(v2.app.subdomain);
    await Bun.sleep(300);
    const askedAt = Date.now();
    const response = await rollback(server, key, v1.app.id, v1.buildId);
    expect(response.status).toBe(202);
    const entry = response.body.build;
    // Nothing serves it yet: it is `building` until the release has switched.
    expect(entry).toMatchObject({ trigger: "rollback", rollbackOf: v1.buildId, status: "building", finishedAt: null, image: v1Build.build.image, imageKept: true });
    expect(entry.id).not.toBe(v1.buildId);
    expect(response.body.app.id).toBe(v1.app.id);

    let servedAfterMs = -1;
    while (Date.now() - askedAt < 30_000) {
      if (poller.answers.at(-1)?.text === "version one") {
        servedAfterMs = Date.now() - askedAt;
        // Succeeded from the switch on, not once the old container is retired a second or more later.
        expect((await getBuild(server, key, v1.app.id, entry.id)).build.status).toBe("succeeded");
        break;
      }
      await Bun.sleep(50);
    }
    await Bun.sleep(1_500); // past the old container's drain and removal
    const answers = await poller.stop();
    expect(servedAfterMs).toBeGreaterThanOrEqual(0);
    expect(servedAfterMs).toBeLessThan(10_000);
    expect(answers.length).toBeGreaterThan(20);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    // Version two until the switch, then version one only.
    const texts = answers.map((answer) => answer.text);
    const switchedAt = texts.indexOf("version one");
    expect(texts.slice(0, switchedAt).every((text) => text === "version two")).toBe(true);
    expect(texts.slice(switchedAt).every((text) => text === "version one")).toBe(true);
    expect(texts[0]).toBe("version two");

    const app = await waitForStatus(server, key, v1.app.id, ["running"]);
    expect(app.currentBuildId).toBe(entry.id);
    const { log, build } = await finishedBuild(v1.app.id, entry.id);
    expect(build).toMatchObject({ status: "succeeded", trigger: "rollback", rollbackOf: v1.buildId, error: null });
    expect(build.finishedAt).not.toBeNull();
    expect(log).toContain(`==> Rollback to build ${v1.buildId}: releasing its kept image ${v1Build.build.image}, no build`);
    expect(log).toContain("==> Serving from container");
    expect(log).not.toContain("Install and build steps");
    expect(log).not.toContain("Building image");

    const audit = await server.request("GET", "/api/organization/audit-log", { key });
    expect(audit.body.events.filter((event: any) => event.action === "app.rolled_back" && event.target === `rolled (${v1.app.id})`)).toHaveLength(1);

    // The history lists the entry first; both earlier images are still kept (3 by default).
    const history = (await server.request("GET", `/api/apps/${v1.app.id}/builds`, { key })).body.builds;
    expect(history.map((listed: any) => [listed.id, listed.imageKept])).toEqual([
      [entry.id, true],
      [v2.buildId, true],
      [v1.buildId, true],
    ]);

    // Rolling back to the build serving now is allowed: a fresh container of the same image.
    const again = await rollback(server, key, v1.app.id, entry.id);
    expect(again.status).toBe(202);
    expect(again.body.build).toMatchObject({ rollbackOf: entry.id, image: v1Build.build.image });
    let current: any;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(200)) {
      current = (await server.request("GET", `/api/apps/${v1.app.id}`, { key })).body.app;
      if (current.currentBuildId === again.body.build.id && current.status === "running") break;
    }
    expect(current.currentBuildId).toBe(again.body.build.id);
    expect(await (await viaProxy(server, v1.app.subdomain)).text()).toBe("version one");
  }, 240_000);

  test("a release that fails: the entry ends `failed` with the reason, and the app keeps serving without a failed request", async () => {
    const { app, v1BuildId, v2BuildId } = await moodyAppWith("moody-exits", "exit");
    const poller = pollThroughProxy(app.subdomain);
    await Bun.sleep(300);
    const response = await rollback(server, key, app.id, v1BuildId);
    expect(response.status).toBe(202);
    expect(response.body.build).toMatchObject({ status: "building", rollbackOf: v1BuildId });

    const { build, log } = await finishedBuild(app.id, response.body.build.id);
    const answers = await poller.stop();
    expect(build.status).toBe("failed");
    expect(build.error).toContain("the app exited with code 3 before listening");
    expect(build.error).toContain(`still serving build ${v2BuildId}`);
    expect(build.finishedAt).not.toBeNull();
    expect(log).toContain("==> Release failed: the app exited with code 3");
    expect(answers.length).toBeGreaterThan(5);
    expect(answers.filter((answer) => answer.status !== 200 || answer.text !== "moody 2")).toEqual([]);
    const after = (await server.request("GET", `/api/apps/${app.id}`, { key })).body.app;
    expect(after).toMatchObject({ status: "running", currentBuildId: v2BuildId });
    expect(after.statusReason).toContain("exited with code 3");
    expect(await containersOfBuild(response.body.build.id)).toEqual([]);
    // A failed entry is no release to come back to.
    expect((await rollback(server, key, app.id, build.id)).body.code).toBe("BUILD_NOT_RELEASABLE");
  }, 240_000);

  test("a deploy built but never released ends `failed` (\"not released: …\"), and is no rollback target", async () => {
    const { app, v2BuildId } = await moodyAppWith("moody-deploy-fails", "exit");
    const response = await deployZip(server, key, { name: "moody-deploy-fails", runtime: "node", memoryMB: "64" }, moody(1));
    expect(response.status).toBe(202);
    // Built, it is `succeeded` until its release ends: polled until the release has failed and been recorded.
    let found: any;
    let failedAt = Infinity;
    for (const deadline = Date.now() + 90_000; Date.now() < deadline && Date.now() < failedAt + 5_000; await Bun.sleep(200)) {
      found = await getBuild(server, key, app.id, response.body.buildId);
      if (found.build.status === "failed") break;
      if (found.log.includes("==> Release failed")) failedAt = Math.min(failedAt, Date.now());
    }
    const { build, log } = found;
    // The env value "exit" is masked in the build's log.
    expect(log).toContain("==> Release failed: the app ****ed with code 3");
    expect(build.status).toBe("failed");
    expect(build.error).toStartWith("not released: the app exited with code 3");
    expect((await rollback(server, key, app.id, build.id)).body.code).toBe("BUILD_NOT_RELEASABLE");
    expect((await server.request("GET", `/api/apps/${app.id}`, { key })).body.app).toMatchObject({ status: "running", currentBuildId: v2BuildId });
  }, 240_000);

  test("while the release runs a cancel is refused; a stop ends it, and the entry ends `canceled`", async () => {
    const { app, v1BuildId } = await moodyAppWith("moody-slow", "slow");
    const entry = (await rollback(server, key, app.id, v1BuildId)).body.build;
    await untilReleaseStarted(app.id, entry.id);
    expect(await containersOfBuild(entry.id)).toHaveLength(1);

    const cancel = await server.request("POST", `/api/apps/${app.id}/builds/${entry.id}/cancel`, { key });
    expect(cancel.status).toBe(409);
    expect(cancel.body).toMatchObject({ success: false, code: "BUILD_FINISHED" });
    expect(cancel.body.error).toContain("cannot be canceled");
    expect((await getBuild(server, key, app.id, entry.id)).build.status).toBe("building");

    expect((await server.request("POST", `/api/apps/${app.id}/stop`, { key })).status).toBe(202);
    const { build, log } = await finishedBuild(app.id, entry.id, 30_000);
    expect(build).toMatchObject({ status: "canceled", error: "not released: the app was stopped" });
    expect(log).toContain("==> Release cancelled: the app was stopped");
    expect(await waitForStatus(server, key, app.id, ["stopped"], 30_000)).toMatchObject({ status: "stopped" });
    expect(await containersOfBuild(entry.id)).toEqual([]);
  }, 240_000);

  test("refusals: an unknown build, another app's build, a failed build, a deleted app", async () => {
    const mine = await deployVersion(server, key, "refusing", "mine");
    const other = await deployVersion(server, key, "other-app", "other");

    const unknown = await rollback(server, key, mine.app.id, "bld_nosuchbuild");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false, code: "NOT_FOUND" });
    const othersBuild = await rollback(server, key, mine.app.id, other.buildId);
    expect(othersBuild.status).toBe(404);
    expect(othersBuild.body.code).toBe("NOT_FOUND");

    const failing = await deployZip(server, key, { name: "refusing", runtime: "node", memoryMB: "64" }, appZip({
      "package.json": JSON.stringify({ name: "refusing", scripts: { build: "exit 1", start: "node x.js" } }),
    }));
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await Bun.sleep(250)) {
      if ((await getBuild(server, key, mine.app.id, failing.body.buildId)).build.status === "failed") break;
    }
    const refused = await rollback(server, key, mine.app.id, failing.body.buildId);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ success: false, code: "BUILD_NOT_RELEASABLE" });
    expect(refused.body.error).toContain("failed");
    // Nothing changed: the first build serves, and no entry was made.
    const builds = (await server.request("GET", `/api/apps/${mine.app.id}/builds`, { key })).body.builds;
    expect(builds.map((listed: any) => listed.trigger)).toEqual(["redeploy", "upload"]);
    expect(await (await viaProxy(server, mine.app.subdomain)).text()).toBe("mine");

    expect((await server.request("DELETE", `/api/apps/${other.app.id}`, { key })).status).toBe(202);
    const deleted = await rollback(server, key, other.app.id, other.buildId);
    expect(deleted.status).toBe(404);
    expect(deleted.body.code).toBe("NOT_FOUND");
  }, 240_000);
});

describe("images kept for rollbacks (PLATFORM_APP_IMAGES_KEPT=1)", () => {
  test("the older image is removed from the engine, and a rollback to that ZIP build is refused", async () => {
    const v1 = await deployVersion(keepingOne, keepingOneKey, "kept-one", "first");
    const v1Image = (await getBuild(keepingOne, keepingOneKey, v1.app.id, v1.buildId)).build.image as string;
    expect(await localDriver().hasImage(v1Image)).toBe(true);
    const v2 = await deployVersion(keepingOne, keepingOneKey, "kept-one", "second");

    let v1Build: any;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(200)) {
      v1Build = (await getBuild(keepingOne, keepingOneKey, v1.app.id, v1.buildId)).build;
      if (!v1Build.imageKept) break;
    }
    expect(v1Build.imageKept).toBe(false);
    // The build is marked before the engine is asked, and the line is logged once it answered.
    let v2Build: any;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(200)) {
      v2Build = await getBuild(keepingOne, keepingOneKey, v2.app.id, v2.buildId);
      if (v2Build.log.includes("==> Removed the older image")) break;
    }
    expect(v2Build.log).toContain(`==> Removed the older image ${v1Image}`);
    expect(await localDriver().hasImage(v1Image)).toBe(false);
    expect(v2Build.build.imageKept).toBe(true);

    const refused = await rollback(keepingOne, keepingOneKey, v1.app.id, v1.buildId);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ success: false, code: "ROLLBACK_UNAVAILABLE" });
    expect(refused.body.error).toContain(`The image of build ${v1.buildId} was removed`);
    expect(await (await viaProxy(keepingOne, v2.app.subdomain)).text()).toBe("second");
  }, 240_000);
});

describe("a rollback a platform restart interrupts", () => {
  test("its entry ends `failed`, its container is removed, and the app serves its build from before", async () => {
    const { app, v1BuildId, v2BuildId } = await moodyAppWith("moody-restarted", "slow");
    const entry = (await rollback(server, key, app.id, v1BuildId)).body.build;
    await untilReleaseStarted(app.id, entry.id);
    await server.stop("SIGKILL");
    await server.boot();

    const { build, log } = await finishedBuild(app.id, entry.id, 5_000);
    expect(build).toMatchObject({ status: "failed", error: "not released: interrupted by a platform restart" });
    expect(log).toContain("==> Interrupted by a platform restart");
    const recovered = await waitForStatus(server, key, app.id, ["running", "failed"]);
    expect(recovered).toMatchObject({ status: "running", currentBuildId: v2BuildId });
    expect(await containersOfBuild(entry.id)).toEqual([]);
    let answer = "";
    for (let attempt = 0; attempt < 50 && answer !== "moody 2"; attempt++) {
      answer = await (await viaProxy(server, app.subdomain)).text();
      if (answer !== "moody 2") await Bun.sleep(100);
    }
    expect(answer).toBe("moody 2");
  }, 240_000);
});
