// Deploys from a prebuilt image, against a real registry on loopback (test/helpers/registry.ts) and
// the real engine: pulls with and without the workspace's credentials, the failures a user must be
// told about plainly (refused credentials, missing tag, a registry that never answers, an image
// too large or claiming the platform's labels), the digest recorded and pinned, a redeploy that
// follows a moved tag and a rollback to the earlier digest, the container's hardening, and the
// credentials never shown nor usable by another workspace.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli, dockerJson } from "../../helpers/docker";
import { freePort } from "../../helpers/ports";
import { removeImagesFrom, startRegistry, type TestRegistry } from "../../helpers/registry";
import { workspaceNetworkName } from "../../../src/docker/workspace-network";

const USER = "deployer";
const PASSWORD = "Reg1stry-Passw0rd-x7Q";

let open: TestRegistry;
let locked: TestRegistry;
/** Accepts connections and never answers: a registry that hangs. */
let silent: TCPSocketListener<undefined>;
const held: Socket<undefined>[] = [];
let silentHost: string;
let server: TestServer;
let key: string;
let workspaceId: string;
let otherKey: string;
/** Every answer the tests got, to look for the password in. */
const answers: string[] = [];

beforeAll(async () => {
  [open, locked] = await Promise.all([startRegistry(), startRegistry({ name: USER, password: PASSWORD })]);
  const silentPort = freePort();
  silent = Bun.listen({ hostname: "127.0.0.1", port: silentPort, socket: { open: (socket) => void held.push(socket), data() {} } });
  silentHost = `127.0.0.1:${silentPort}`;
  server = await TestServer.start({
    PLATFORM_BUILD_REGISTRIES: [open.host, locked.host, silentHost].join(","),
    PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS: "4",
    PLATFORM_IMAGE_MAX_MB: "8",
  });
  ({ key, workspaceId } = await server.createKey("images"));
  otherKey = (await server.createKey("images other", "images-other")).key;
}, 60_000);

afterAll(async () => {
  await Promise.all([deleteAllApps(server, key, 60_000), deleteAllApps(server, otherKey, 60_000)]);
  await server.stop();
  for (const registry of [open, locked]) removeImagesFrom(registry.host);
  await Promise.all([open.stop(), locked.stop()]);
  for (const socket of held) socket.end();
  silent.stop(true);
}, 120_000);

async function call(method: string, path: string, options: { key?: string; body?: unknown } = {}) {
  const response = await server.request(method, path, { key: options.key ?? key, body: options.body });
  answers.push(JSON.stringify(response.body));
  return response;
}

const deployImage = (body: Record<string, unknown>, apiKey = key) => call("POST", "/api/apps/deploy-image", { key: apiKey, body: { memoryMB: 64, exposePort: 8080, ...body } });

async function buildLog(appId: string, buildId: string, apiKey = key): Promise<string> {
  const response = await fetch(`${server.baseUrl}/api/apps/${appId}/builds/${buildId}/log`, { headers: { authorization: `Bearer ${apiKey}` } });
  const text = await response.text();
  answers.push(text);
  return text;
}

/** Waits until the build has ended; answers it. */
async function finishedBuild(appId: string, buildId: string, apiKey = key) {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await Bun.sleep(200)) {
    const { body } = await call("GET", `/api/apps/${appId}/builds/${buildId}`, { key: apiKey });
    if (!["queued", "building"].includes(body.build.status)) return body.build;
  }
  throw new Error(`build ${buildId} did not end`);
}

/** Deploys and waits until that build serves (or fails); answers the app, the build and its log. */
async function deployAndWait(body: Record<string, unknown>, apiKey = key) {
  const response = await deployImage(body, apiKey);
  expect(response.status).toBe(202);
  const { app, buildId } = response.body;
  const build = await finishedBuild(app.id, buildId, apiKey);
  const current = await waitForStatus(server, apiKey, app.id, ["running", "failed"]);
  return { app: current, build, log: await buildLog(app.id, buildId, apiKey) };
}

describe("deploy from an open registry", () => {
  test("pulled, pinned to the digest, served through the proxy, hardened, the pull in the log", async () => {
    const digest = await open.pushWebImage("web/hello", "1.0", { text: "hello from an image" });
    const { app, build, log } = await deployAndWait({ name: "img-hello", image: `${open.host}/web/hello:1.0` });
    expect(build.status).toBe("succeeded");
    expect(build.imageDigest).toBe(`${open.host}/web/hello@${digest}`);
    expect(app).toMatchObject({ status: "running", runtime: "image", image: `${open.host}/web/hello:1.0`, user: null });
    const served = await viaProxy(server, app.subdomain);
    expect(served.status).toBe(200);
    expect(await served.text()).toBe("hello from an image");
    expect(log).toContain(`==> Pulling ${open.host}/web/hello:1.0`);
    expect(log).toContain(`Digest: ${digest}`);

    const container = await servingContainer(app.id);
    expect(container.HostConfig.Privileged).toBe(false);
    expect(container.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
    expect(container.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(container.HostConfig.CapAdd.toSorted()).toEqual(["CHOWN", "DAC_OVERRIDE", "FOWNER", "NET_BIND_SERVICE", "SETGID", "SETUID"]);
    expect(container.HostConfig.Memory).toBe(64 * 1024 * 1024);
    expect(container.HostConfig.PidsLimit).toBeGreaterThan(0);
    expect(container.HostConfig.NanoCpus).toBeGreaterThan(0);
    // On the workspace's network, where its egress rules apply, as every app.
    expect(container.HostConfig.NetworkMode).toBe(workspaceNetworkName(workspaceId));
    // The image's own user (root here), not PLATFORM_APP_USER; the image pinned by ID.
    expect(container.Config.User).toBe("");
    const pinned = (await dockerJson("image", "inspect", `platform-app-${app.id.toLowerCase()}:${build.id.toLowerCase()}`))[0];
    expect(container.Image).toBe(pinned.Id);
  }, 120_000);

  test("without exposePort the app takes the port the image EXPOSEs; the log says so and warns of an image VOLUME without a volume", async () => {
    await open.pushWebImage("web/exposed", "1", { text: "on the exposed port", changes: ["EXPOSE 8081/tcp", "VOLUME /srv/data"] });
    const { app, build, log } = await deployAndWait({ name: "img-exposed", image: `${open.host}/web/exposed:1`, exposePort: undefined });
    expect(build.status).toBe("succeeded");
    expect(app).toMatchObject({ status: "running", exposePort: 8081 });
    expect(log).toContain("exposePort 8081: the port the image EXPOSEs");
    expect(log).toContain("the image declares VOLUME /srv/data: what the app writes there is lost at every redeploy");
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("on the exposed port");
  }, 120_000);

  test("an image app stays one: no ZIP deploy onto its name, no runtime or builder in its settings", async () => {
    const { body } = await call("GET", "/api/apps/");
    const app = body.apps.find((entry: { name: string }) => entry.name === "img-hello");
    const zip = await deployZip(server, key, { name: "img-hello", runtime: "node", memoryMB: "64" }, appZip({ "index.html": "zip" }));
    expect({ status: zip.status, code: zip.body.code }).toEqual({ status: 409, code: "NAME_TAKEN" });
    for (const change of [{ runtime: "node" }, { builder: "dockerfile" }]) {
      const settings = await call("PUT", `/api/apps/${app.id}/settings`, { body: change });
      expect({ status: settings.status, code: settings.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
    }
    expect((await call("GET", `/api/apps/${app.id}`)).body.app).toMatchObject({ runtime: "image", status: "running" });
  });

  test("`user` runs the container as that user; a startup command replaces the image's CMD", async () => {
    await open.pushWebImage("web/user", "1", { text: "as a user" });
    const { app } = await deployAndWait({ name: "img-user", image: `${open.host}/web/user:1`, user: "1234:1234", startupCommand: "exec /bin/busybox httpd -f -p 8080 -h /www" });
    expect(app).toMatchObject({ status: "running", user: "1234:1234" });
    const container = await servingContainer(app.id);
    expect(container.Config.User).toBe("1234:1234");
    expect(container.Config.Entrypoint).toEqual(["/bin/sh", "-c"]);
    expect(container.Config.Cmd).toEqual(["exec /bin/busybox httpd -f -p 8080 -h /www"]);
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("as a user");

    // A redeploy that leaves `user` out keeps it; a settings change sets or clears it, with a restart.
    const redeployed = await deployAndWait({ name: "img-user", image: `${open.host}/web/user:1` });
    expect(redeployed.app.user).toBe("1234:1234");
    expect((await servingContainer(app.id)).Config.User).toBe("1234:1234");
    const refused = await call("PUT", `/api/apps/${app.id}/settings`, { body: { user: "root; rm -rf /" } });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
    const cleared = await call("PUT", `/api/apps/${app.id}/settings`, { body: { user: "" } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ app: { user: null }, restarted: true });
    for (let deadline = Date.now() + 30_000; Date.now() < deadline && (await servingContainer(app.id).catch(() => undefined))?.Config.User !== ""; ) await Bun.sleep(200);
    expect((await servingContainer(app.id)).Config.User).toBe("");
  }, 180_000);

  test("a redeploy pulls the moved tag, a rollback goes back to the earlier digest", async () => {
    const first = await open.pushWebImage("web/moving", "stable", { text: "version one" });
    const one = await deployAndWait({ name: "img-moving", image: `${open.host}/web/moving:stable` });
    expect(one.build.imageDigest).toBe(`${open.host}/web/moving@${first}`);
    const second = await open.pushWebImage("web/moving", "stable", { text: "version two" });
    expect(second).not.toBe(first);
    const redeploy = await call("POST", `/api/apps/${one.app.id}/redeploy`);
    expect(redeploy.status).toBe(202);
    const two = await finishedBuild(one.app.id, redeploy.body.buildId);
    expect(two.imageDigest).toBe(`${open.host}/web/moving@${second}`);
    await waitUntilServes(one.app.subdomain, "version two");

    const rollback = await call("POST", `/api/apps/${one.app.id}/builds/${one.build.id}/rollback`);
    expect(rollback.status).toBe(202);
    // The kept image is released again, and the entry says which digest it is.
    expect(rollback.body.build).toMatchObject({ image: one.build.image, imageDigest: `${open.host}/web/moving@${first}` });
    await waitUntilServes(one.app.subdomain, "version one");
    const container = await servingContainer(one.app.id);
    const firstImage = (await dockerJson("image", "inspect", one.build.image))[0];
    expect(container.Image).toBe(firstImage.Id);

    // A new startup command restarts the image rolled back to: no pull of the moved tag.
    const changed = await call("PUT", `/api/apps/${one.app.id}/settings`, { body: { startupCommand: "exec /bin/busybox httpd -f -p 8080 -h /www" } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ restarted: true, buildId: null });
    for (let deadline = Date.now() + 30_000; Date.now() < deadline && (await servingContainer(one.app.id).catch(() => undefined))?.Config.Entrypoint?.[0] !== "/bin/sh"; ) await Bun.sleep(200);
    const restarted = await servingContainer(one.app.id);
    expect(restarted.Config.Cmd).toEqual(["exec /bin/busybox httpd -f -p 8080 -h /www"]);
    expect(restarted.Image).toBe(firstImage.Id);
    await waitUntilServes(one.app.subdomain, "version one");
  }, 180_000);

  test("an image the platform itself is set to use (PLATFORM_IMAGE_*) keeps its name after an app's pull of it", async () => {
    const platformImage = `${open.host}/web/platformed:1`;
    await open.pushWebImage("web/platformed", "1", { text: "platform's own" });
    expect((await Bun.spawn(["docker", "pull", "-q", platformImage], { stdout: "ignore", stderr: "ignore" }).exited)).toBe(0);
    const configured = await TestServer.start({ PLATFORM_BUILD_REGISTRIES: open.host, PLATFORM_IMAGE_REDIS: platformImage });
    const configuredKey = (await configured.createKey("images platformed")).key;
    try {
      const response = await configured.request("POST", "/api/apps/deploy-image", { key: configuredKey, body: { name: "img-platformed", image: platformImage, memoryMB: 64, exposePort: 8080 } });
      expect(response.status).toBe(202);
      const app = await waitForStatus(configured, configuredKey, response.body.app.id, ["running", "failed"]);
      expect(app.status).toBe("running");
      expect(await imageNamed(platformImage)).toBe(true);
    } finally {
      await deleteAllApps(configured, configuredKey, 60_000);
      await configured.stop();
      removeImagesFrom(open.host);
    }
  }, 120_000);

  test("a rollback past PLATFORM_APP_IMAGES_KEPT pulls the earlier digest again", async () => {
    const keepingOne = await TestServer.start({ PLATFORM_BUILD_REGISTRIES: open.host, PLATFORM_APP_IMAGES_KEPT: "1" });
    try {
      const oneKey = (await keepingOne.createKey("images kept")).key;
      const deployOn = async () => {
        const response = await keepingOne.request("POST", "/api/apps/deploy-image", { key: oneKey, body: { name: "img-kept", image: `${open.host}/web/kept:1`, memoryMB: 64, exposePort: 8080 } });
        expect(response.status).toBe(202);
        for (let deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(200)) {
          const { body } = await keepingOne.request("GET", `/api/apps/${response.body.app.id}`, { key: oneKey });
          if (body.app.currentBuildId === response.body.buildId) return { appId: response.body.app.id as string, buildId: response.body.buildId as string };
        }
        throw new Error("the deploy never served");
      };
      const first = await open.pushWebImage("web/kept", "1", { text: "kept one" });
      const one = await deployOn();
      await open.pushWebImage("web/kept", "1", { text: "kept two" });
      await deployOn();
      // Retention runs once the release has retired the old container.
      let old: any;
      for (let deadline = Date.now() + 30_000; Date.now() < deadline && old?.imageKept !== false; await Bun.sleep(200)) {
        old = (await keepingOne.request("GET", `/api/apps/${one.appId}/builds/${one.buildId}`, { key: oneKey })).body.build;
      }
      expect(old).toMatchObject({ imageKept: false, imageDigest: `${open.host}/web/kept@${first}` });
      // Gone from the engine: the platform's name was the only one left on it.
      expect(await imageNamed(old.image)).toBe(false);
      expect(await imageNamed(`${open.host}/web/kept@${first}`)).toBe(false);
      const rollback = await keepingOne.request("POST", `/api/apps/${one.appId}/builds/${one.buildId}/rollback`, { key: oneKey });
      expect(rollback.status).toBe(202);
      let build: any;
      for (let deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(200)) {
        build = (await keepingOne.request("GET", `/api/apps/${one.appId}/builds/${rollback.body.build.id}`, { key: oneKey })).body.build;
        if (!["queued", "building"].includes(build.status)) break;
      }
      expect(build).toMatchObject({ status: "succeeded", imageDigest: `${open.host}/web/kept@${first}` });
      const app = (await keepingOne.request("GET", `/api/apps/${one.appId}`, { key: oneKey })).body.app;
      let text = "";
      for (let deadline = Date.now() + 30_000; Date.now() < deadline && text !== "kept one"; await Bun.sleep(200)) {
        text = await (await fetch(`http://127.0.0.1:${keepingOne.proxyPort}/`, { headers: { host: `${app.subdomain}.localhost` } })).text();
      }
      expect(text).toBe("kept one");
    } finally {
      await deleteAllApps(keepingOne, (await keepingOne.createKey("cleanup")).key, 60_000);
      await keepingOne.stop();
    }
  }, 180_000);

  test("a missing tag fails the build with a clear error; the version serving keeps serving", async () => {
    await open.pushWebImage("web/tagged", "1", { text: "still here" });
    const { app } = await deployAndWait({ name: "img-tagged", image: `${open.host}/web/tagged:1` });
    const { build, log } = await deployAndWait({ name: "img-tagged", image: `${open.host}/web/tagged:no-such-tag` });
    expect(build.status).toBe("failed");
    expect(build.error).toContain(`${open.host}/web/tagged:no-such-tag was not found`);
    expect(log).toContain("was not found");
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("still here");
  }, 120_000);

  test("an image larger than PLATFORM_IMAGE_MAX_MB is refused and removed", async () => {
    const digest = await open.pushWebImage("web/large", "1", { padBytes: 12 * 1024 * 1024 });
    const { build } = await deployAndWait({ name: "img-large", image: `${open.host}/web/large:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toMatch(/is \d+ MB unpacked, over the limit of 8 MB \(PLATFORM_IMAGE_MAX_MB\)/);
    expect(await imageNamed(`${open.host}/web/large:1`)).toBe(false);
    expect(await imageNamed(`${open.host}/web/large@${digest}`)).toBe(false);
  }, 120_000);

  test("an image whose layers alone pass PLATFORM_IMAGE_MAX_MB is stopped during its pull, before the disk fills", async () => {
    const digest = await open.pushWebImage("web/huge", "1", { padBytes: 12 * 1024 * 1024, padRandom: true });
    const { build, log } = await deployAndWait({ name: "img-huge", image: `${open.host}/web/huge:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toBe(`the image ${open.host}/web/huge:1 is too large: its layers take over 8 MB to download, over the limit of 8 MB (PLATFORM_IMAGE_MAX_MB); the pull was stopped`);
    expect(log).not.toContain("Pull complete");
    expect(await imageNamed(`${open.host}/web/huge:1`)).toBe(false);
    expect(await imageNamed(`${open.host}/web/huge@${digest}`)).toBe(false);
  }, 120_000);

  test("an image with the platform's labels is refused", async () => {
    await open.pushWebImage("web/impostor", "1", { labels: { "platform.managed": "true", "platform.app": "app_someone" } });
    const { build, app } = await deployAndWait({ name: "img-impostor", image: `${open.host}/web/impostor:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toMatch(/labels of the platform's own \((platform\.managed, platform\.app|platform\.app, platform\.managed)\)/);
    expect(app.status).toBe("failed");
  }, 120_000);

  test("a registry that never answers fails the build at PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS", async () => {
    const started = Date.now();
    const { build } = await deployAndWait({ name: "img-silent", image: `${silentHost}/web/hangs:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toContain("did not finish within 4 s (PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS)");
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  test("a restart during a pull takes off the name the pull was getting, even one the engine had before", async () => {
    const name = `${silentHost}/web/left:1`;
    // A name already on the engine (an earlier pull a restart stopped, an administrator's): no access by itself.
    const empty = Bun.spawn(["tar", "-c", "-T", "/dev/null"], { stdout: "pipe" });
    const imported = Bun.spawn(["docker", "import", "-", name], { stdin: empty.stdout, stdout: "ignore", stderr: "ignore" });
    expect(await imported.exited).toBe(0);
    const restarting = await TestServer.start({ PLATFORM_BUILD_REGISTRIES: silentHost, PLATFORM_IMAGE_PULL_TIMEOUT_SECONDS: "120" });
    const restartKey = (await restarting.createKey("restart")).key;
    try {
      const connectionsBefore = held.length;
      const response = await restarting.request("POST", "/api/apps/deploy-image", { key: restartKey, body: { name: "img-left", image: name, memoryMB: 64, exposePort: 8080 } });
      expect(response.status).toBe(202);
      const { app, buildId } = response.body;
      // The engine has reached the registry: the pull is in flight.
      for (let deadline = Date.now() + 30_000; Date.now() < deadline && held.length === connectionsBefore; ) await Bun.sleep(100);
      expect(held.length).toBeGreaterThan(connectionsBefore);
      await restarting.stop("SIGKILL");
      await restarting.boot();
      const build = (await restarting.request("GET", `/api/apps/${app.id}/builds/${buildId}`, { key: restartKey })).body.build;
      expect(build).toMatchObject({ status: "failed", error: "interrupted by a platform restart" });
      for (let deadline = Date.now() + 10_000; Date.now() < deadline && (await imageNamed(name)); ) await Bun.sleep(200);
      expect(await imageNamed(name)).toBe(false);
    } finally {
      if (await imageNamed(name)) await dockerCli("rmi", name);
      await deleteAllApps(restarting, restartKey, 60_000);
      await restarting.stop();
    }
  }, 120_000);

  test("references and registries are checked before anything is kept", async () => {
    for (const [image, code] of [
      ["", "VALIDATION_FAILED"],
      [`${open.host}/Web/upper:1`, "VALIDATION_FAILED"],
      [`${open.host}/web/x:${"t".repeat(200)}`, "VALIDATION_FAILED"],
      ["127.0.0.9:5000/web/x:1", "IMAGE_NOT_ALLOWED"],
      ["registry.internal.example:5000/web/x:1", "IMAGE_NOT_ALLOWED"],
      ["sha256:" + "a".repeat(64), "IMAGE_NOT_ALLOWED"],
      ["platform-app-app_x:bld_y", "IMAGE_NOT_ALLOWED"],
    ] as const) {
      const response = await deployImage({ name: "img-refused", image });
      expect({ image, status: response.status, code: response.body.code }).toEqual({ image, status: 400, code });
    }
    expect((await deployImage({ name: "img-refused", image: `${open.host}/web/x:1`, user: "root; rm -rf /" })).body.code).toBe("VALIDATION_FAILED");
    expect((await deployImage({ name: "img-refused", image: `${open.host}/web/x:1`, runtime: "node" })).body.code).toBe("VALIDATION_FAILED");
    // The volume codes are the deploy's own, documented as the other deploys' (the answer is checked against the OpenAPI document).
    expect((await deployImage({ name: "img-refused", image: `${open.host}/web/x:1`, volumes: [{ name: "data", mountPath: "relative" }] })).body.code).toBe("INVALID_MOUNT_PATH");
    expect((await call("GET", "/api/apps/")).body.apps.map((app: { name: string }) => app.name)).not.toContain("img-refused");
  });

  test("apps deploying one image at the same moment all run it, and it leaves the engine with the last of them", async () => {
    const digest = await open.pushWebImage("web/shared", "1", { text: "shared" });
    const names = ["img-shared-a", "img-shared-b", "img-shared-c"];
    const deployed = await Promise.all(names.map((name) => deployAndWait({ name, image: `${open.host}/web/shared:1` })));
    for (const { app, build } of deployed) {
      expect({ status: build.status, error: build.error }).toEqual({ status: "succeeded", error: null });
      expect(await (await viaProxy(server, app.subdomain)).text()).toBe("shared");
    }
    for (const { app } of deployed) await call("DELETE", `/api/apps/${app.id}`);
    const pinnedNames = deployed.map(({ build }) => build.image as string);
    for (let deadline = Date.now() + 30_000; Date.now() < deadline && (await Promise.all(pinnedNames.map(imageNamed))).some(Boolean); ) await Bun.sleep(200);
    for (const name of [...pinnedNames, `${open.host}/web/shared:1`, `${open.host}/web/shared@${digest}`]) expect({ name, present: await imageNamed(name) }).toEqual({ name, present: false });
  }, 120_000);

  test("a form body deploys as JSON does", async () => {
    await open.pushWebImage("web/form", "1", { text: "from a form" });
    const form = new FormData();
    for (const [name, value] of Object.entries({ name: "img-form", image: `${open.host}/web/form:1`, memoryMB: "64", exposePort: "8080", envVars: '{"GREETING":"hi"}' })) form.set(name, value);
    const response = await call("POST", "/api/apps/deploy-image", { body: form });
    expect(response.status).toBe(202);
    await waitForStatus(server, key, response.body.app.id, ["running"]);
    expect(await (await viaProxy(server, response.body.app.subdomain)).text()).toBe("from a form");
  }, 120_000);
});

describe("a private registry and the workspace's credentials", () => {
  let credentialId: string;
  /** The platform's name for the private image the first workspace pulled. */
  let privateImage: string;

  test("without credentials the build fails saying the registry asks for them", async () => {
    await locked.pushWebImage("team/private", "1", { text: "private image" });
    const { build } = await deployAndWait({ name: "img-private", image: `${locked.host}/team/private:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toContain(`${locked.host} asks for credentials`);
  }, 120_000);

  test("a wrong password: the check says so, and the build fails saying the credentials were refused", async () => {
    const added = await call("POST", "/api/registries/", { body: { registry: locked.host, username: USER, password: "wrong-password" } });
    expect(added.status).toBe(201);
    const checked = await call("POST", `/api/registries/${added.body.registry.id}/test`);
    expect(checked.status).toBe(200);
    expect(checked.body.login.ok).toBe(false);
    const { build } = await deployAndWait({ name: "img-private", image: `${locked.host}/team/private:1` });
    expect(build.status).toBe("failed");
    expect(build.error).toContain(`${locked.host} refused the workspace's credentials (user ${USER})`);
    expect((await call("DELETE", `/api/registries/${added.body.registry.id}`)).status).toBe(200);
  }, 120_000);

  test("with the right credentials: checked, listed without the password, pulled", async () => {
    const added = await call("POST", "/api/registries/", { body: { registry: locked.host, username: USER, password: PASSWORD } });
    expect(added.status).toBe(201);
    credentialId = added.body.registry.id;
    expect(added.body.registry).toEqual({ id: credentialId, registry: locked.host, username: USER, workspaceId: expect.any(String), createdAt: expect.any(String) });
    expect((await call("POST", "/api/registries/", { body: { registry: locked.host, username: USER, password: PASSWORD } })).body.code).toBe("REGISTRY_TAKEN");
    const checked = await call("POST", `/api/registries/${credentialId}/test`);
    expect(checked.body.login).toEqual({ ok: true, message: expect.stringContaining("accepted") });
    const listed = await call("GET", "/api/registries/");
    expect(listed.body.registries.map((entry: any) => Object.keys(entry).toSorted())).toEqual([["createdAt", "id", "registry", "username", "workspaceId"]]);
    const { app, build, log } = await deployAndWait({ name: "img-private", image: `${locked.host}/team/private:1` });
    expect(build.status).toBe("succeeded");
    privateImage = build.image;
    expect(log).toContain(`with the workspace's credentials for ${locked.host} (user ${USER})`);
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("private image");
  }, 120_000);

  test("another workspace neither sees nor uses them, nor the private image the first one pulled", async () => {
    expect((await call("GET", "/api/registries/", { key: otherKey })).body.registries).toEqual([]);
    for (const [method, path] of [["POST", `/api/registries/${credentialId}/test`], ["DELETE", `/api/registries/${credentialId}`]] as const) {
      expect((await call(method, path, { key: otherKey })).status).toBe(404);
    }
    const name = `${locked.host}/team/private:1`;
    // The pull took its names off again: only the platform's own name holds the image.
    expect(await imageNamed(name)).toBe(false);
    // A name left on the engine (an administrator's pull, a pull a restart stopped) is no access either.
    await dockerCli("tag", privateImage, name);
    try {
      const zip = await deployZip(server, otherKey, { name: "df-private", runtime: "node", builder: "dockerfile", memoryMB: "64" }, appZip({ Dockerfile: `FROM ${name}\nCMD ["/bin/sh", "-c", "exec /bin/busybox httpd -f -p 3000 -h /www"]\n` }));
      expect(zip.status).toBe(202);
      const built = await finishedBuild(zip.body.app.id, zip.body.buildId, otherKey);
      expect(built.status).toBe("failed");
      expect(built.error).toContain(`names the image ${name}, which could not be pulled`);
      const { build } = await deployAndWait({ name: "img-private", image: name }, otherKey);
      expect(build.status).toBe("failed");
      expect(build.error).toContain(`${locked.host} asks for credentials`);
      // Its failed pull took that name off as well: no pull of the platform's holds it.
      expect(await imageNamed(name)).toBe(false);
    } finally {
      if (await imageNamed(name)) await dockerCli("rmi", name);
    }
  }, 180_000);

  test("the password appears in no answer, log or server output", async () => {
    const everything = [...answers, server.output].join("\n");
    // The password was used: a pull with it succeeded, and a wrong one was refused.
    expect(everything).toContain(`with the workspace's credentials for ${locked.host} (user ${USER})`);
    expect(everything).toContain("refused the workspace's credentials");
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(Buffer.from(`${USER}:${PASSWORD}`).toString("base64"));
  });
});

/** `docker inspect` of the container of the build the app serves now. */
async function servingContainer(appId: string) {
  const { currentBuildId } = (await call("GET", `/api/apps/${appId}`)).body.app;
  const [id] = (await dockerCli("ps", "-q", "--filter", `label=platform.build=${currentBuildId}`)).split("\n");
  return (await dockerJson("container", "inspect", id!))[0];
}

async function imageNamed(name: string): Promise<boolean> {
  const child = Bun.spawn(["docker", "image", "inspect", name], { stdout: "ignore", stderr: "ignore" });
  return (await child.exited) === 0;
}

async function waitUntilServes(subdomain: string, text: string) {
  let last = "";
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await Bun.sleep(200)) {
    last = await (await viaProxy(server, subdomain)).text();
    if (last === text) return;
  }
  throw new Error(`${subdomain} kept answering ${JSON.stringify(last)}, not ${JSON.stringify(text)}`);
}
