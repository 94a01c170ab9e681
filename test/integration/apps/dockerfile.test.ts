// Dockerfile builds on the real engine: a ZIP whose only recognisable part is a Dockerfile builds
// and serves through the proxy; builder "dockerfile" wins over a detectable package.json; what the
// Dockerfile asks for at run time (USER root, setuid binaries) gets it none of those powers; a
// failing RUN step fails the build with the engine's message while the previous build serves; an
// image named by ID, or one the platform made, fails the build before any step; a RUN step runs on
// the workspace network with the build limits, and a cancel stops it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli, dockerJson, uniqueName } from "../../helpers/docker";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

const REGISTRY = "http://127.0.0.1:9/never-contacted/";

let server: TestServer;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  server = await TestServer.start({ PLATFORM_BUILD_NPM_REGISTRY: REGISTRY });
  ({ key, workspaceId } = await server.createKey("dockerfile"));
});
afterAll(async () => {
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

/** Answers what the Dockerfile left in its image: files, build-time values and the process's own identity. */
const REPORTER = `
import { existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
const status = Object.fromEntries(readFileSync("/proc/self/status", "utf8").split("\\n").map((line) => line.split(":\\t")));
const tryRun = (file, args) => { try { return execFileSync(file, args, { stdio: "pipe" }).toString().trim(); } catch (error) { return "refused: " + String(error.stderr || error.message).trim(); } };
createServer((req, res) => {
  if (req.url === "/") return res.end("served by the Dockerfile image");
  res.end(JSON.stringify({
    uid: process.getuid(),
    gid: process.getgid(),
    capabilities: status.CapEff,
    noNewPrivs: status.NoNewPrivs,
    setuidRead: tryRun("/usr/local/bin/rootcat", ["/root-only"]),
    buildValues: readFileSync("/srv/build-values.txt", "utf8").trim().split("\\n"),
    hasIgnoredFile: existsSync("/srv/ignored.txt"),
    hasKeptFile: existsSync("/srv/kept.txt"),
    hasCaFile: existsSync("/srv/.platform/ca.pem"),
  }));
}).listen(Number(process.env.PORT));
`;

const REPORTER_DOCKERFILE = `FROM platform-test/node:latest
USER root
ARG VITE_GREETING
ARG NPM_CONFIG_REGISTRY
ARG PLATFORM_CA_FILE
RUN cp /bin/cat /usr/local/bin/rootcat && chmod 4755 /usr/local/bin/rootcat && echo only-root-reads-this > /root-only && chmod 600 /root-only
WORKDIR /srv
COPY . .
RUN printf '%s\\n' "greeting=$VITE_GREETING" "registry=$NPM_CONFIG_REGISTRY" "ca=$PLATFORM_CA_FILE" > build-values.txt && echo "dockerfile step ran $((6 * 7))"
EXPOSE 80
CMD ["node", "serve.mjs"]
`;

async function deploy(fields: Record<string, string>, files: Record<string, string>) {
  const response = await deployZip(server, key, { runtime: "node", memoryMB: "128", ...fields }, appZip(files));
  expect(response.status).toBe(202);
  const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
  const build = (await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key })).body;
  return { app, buildId: response.body.buildId as string, build: build.build, log: build.log as string };
}

describe("builder auto, a source with nothing detectable but a Dockerfile", () => {
  let deployed: Awaited<ReturnType<typeof deploy>>;
  beforeAll(async () => {
    deployed = await deploy(
      { name: "df-auto", envVars: JSON.stringify({ VITE_GREETING: "hello", SECRET_TOKEN: "not-for-builds" }) },
      {
        Dockerfile: REPORTER_DOCKERFILE,
        "serve.mjs": REPORTER,
        ".dockerignore": "ignored.txt\n",
        "ignored.txt": "left out of the context",
        "kept.txt": "in the context",
      },
    );
    if (deployed.app.status !== "running") throw new Error(`deploy failed: ${deployed.app.statusReason}\n${deployed.log}`);
  });

  test("builds the Dockerfile, says so and why, streams its RUN output, and serves through the proxy", async () => {
    expect(deployed.log).toContain('==> Builder: Dockerfile (builder "auto": nothing detected for runtime node; the source has a Dockerfile)');
    expect(deployed.log).toContain("dockerfile step ran 42");
    expect(deployed.log).toContain("    runs as 1000:1000 (PLATFORM_APP_USER), not as the image's user root");
    expect(deployed.log).toContain("    the image exposes 80/tcp, but the app is reached on port 3000");
    const response = await viaProxy(server, deployed.app.subdomain);
    expect(await response.text()).toBe("served by the Dockerfile image");
  });

  test("the Dockerfile receives the public build-time variables, the registry and the CA bundle; .dockerignore is applied", async () => {
    const report = await (await viaProxy(server, deployed.app.subdomain, "/report")).json();
    expect(report.buildValues).toEqual(["greeting=hello", `registry=${REGISTRY}`, "ca=.platform/ca.pem"]);
    expect(report.hasCaFile).toBe(true);
    expect({ ignored: report.hasIgnoredFile, kept: report.hasKeptFile }).toEqual({ ignored: false, kept: true });
    expect(deployed.log).toContain("    build arguments: VITE_GREETING, NPM_CONFIG_REGISTRY, BUN_CONFIG_REGISTRY, PLATFORM_CA_FILE");
    expect(deployed.log).not.toContain("not-for-builds");
  });

  test("the image carries the platform's labels, so cleanup finds it", async () => {
    const [image] = await dockerJson("image", "inspect", deployed.build.image);
    expect(image.Config.Labels).toMatchObject({ "platform.managed": "true", "platform.workspace": workspaceId, "platform.app": deployed.app.id, "platform.build": deployed.buildId });
  });

  test("USER root and a setuid binary give the app no powers: uid 1000, no capabilities, no new privileges, limits set", async () => {
    const report = await (await viaProxy(server, deployed.app.subdomain, "/report")).json();
    expect({ uid: report.uid, gid: report.gid, capabilities: report.capabilities, noNewPrivs: report.noNewPrivs }).toEqual({
      uid: 1000,
      gid: 1000,
      capabilities: "0000000000000000",
      noNewPrivs: "1",
    });
    expect(report.setuidRead).toStartWith("refused:");
    expect(report.setuidRead).toContain("Permission denied");

    const app = (await server.request("GET", `/api/apps/${deployed.app.id}`, { key })).body.app;
    const containers = await dockerCli("ps", "-q", "--filter", `label=platform.app=${app.id}`);
    const [container] = await dockerJson("inspect", containers.trim().split("\n")[0]);
    expect(container.Config.User).toBe("1000:1000");
    expect(container.HostConfig.Privileged).toBe(false);
    expect(container.HostConfig.CapAdd ?? []).toEqual([]);
    expect(container.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(container.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
    expect(container.HostConfig.Memory).toBe(128 * 1024 * 1024);
    expect(container.HostConfig.PidsLimit).toBeGreaterThan(0);
  });
});

describe('builder "dockerfile"', () => {
  const PACKAGE = JSON.stringify({ name: "detectable", scripts: { start: "node server.js" } });
  const dockerfileApp = (message: string, run = `echo "built by the Dockerfile $((6 * 7))"`) => ({
    "package.json": PACKAGE,
    "server.js": 'require("http").createServer((req, res) => res.end("runtime plan")).listen(process.env.PORT);\n',
    "serve.mjs": `import { createServer } from "node:http";\ncreateServer((req, res) => res.end(${JSON.stringify(message)})).listen(Number(process.env.PORT));\n`,
    Dockerfile: `FROM platform-test/node:latest\nWORKDIR /srv\nCOPY serve.mjs .\nRUN ${run}\nCMD ["node", "serve.mjs"]\n`,
  });

  test("uses the Dockerfile although a package.json would be detected", async () => {
    const { app, log } = await deploy({ name: "df-setting", builder: "dockerfile" }, dockerfileApp("first version"));
    expect(app.status).toBe("running");
    expect(app.builder).toBe("dockerfile");
    expect(log).toContain('==> Builder: Dockerfile (builder setting "dockerfile")');
    expect(log).toContain("built by the Dockerfile 42");
    expect(log).not.toContain("==> Runtime node");
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("first version");
  });

  test("a failing RUN step fails the build with the engine's message; the previous build keeps serving", async () => {
    const { app, buildId, build, log } = await deploy({ name: "df-setting" }, dockerfileApp("second version", 'echo "about to fail" && exit 3'));
    expect(build.status).toBe("failed");
    expect(log).toContain("about to fail");
    expect(log).toMatch(/==> Build failed: The command .*exit 3' returned a non-zero code: 3/);
    expect(app.status).toBe("running");
    expect(app.statusReason).toContain(`Build ${buildId} failed`);
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("first version");
    // The steps that ran before the failure left images (the COPY's holds the source): none stays behind.
    const stepImages = [...log.matchAll(/^ ---> ([0-9a-f]{12})$/gm)].map((match) => match[1]!);
    expect(stepImages.length).toBeGreaterThan(0);
    const dangling = (await dockerCli("images", "-q", "--no-trunc", "--filter", "dangling=true")).trim().split("\n");
    expect(stepImages.filter((id) => dangling.some((full) => full.startsWith(`sha256:${id}`)))).toEqual([]);
  });

  test("without a Dockerfile the build fails with a clear message", async () => {
    const { app, build, log } = await deploy({ name: "df-missing", builder: "dockerfile" }, { "package.json": PACKAGE, "server.js": "" });
    expect(build.status).toBe("failed");
    expect(app.status).toBe("failed");
    expect(log).toContain('==> Build failed: the builder setting is "dockerfile" but the source has no Dockerfile at its root');
  });

  test("an image that gives itself a platform label is refused and removed: the platform would take its containers for another's", async () => {
    const files = { Dockerfile: "FROM platform-test/node:latest\nLABEL platform.database=db_someone_elses\nCMD [\"node\"]\n" };
    const { app, buildId, build, log } = await deploy({ name: "df-label", builder: "dockerfile" }, files);
    expect(build.status).toBe("failed");
    expect(log).toContain('==> Build failed: the image has the label platform.database: labels starting with "platform." are the platform\'s own');
    expect(app.status).toBe("failed");
    const images = (await dockerCli("images", "-q", "--filter", `label=platform.build=${buildId}`)).trim();
    expect(images).toBe("");
  });

  test("deployed again with builder auto: the runtime plan builds it, and the log says the Dockerfile is not used", async () => {
    const { app, log } = await deploy({ name: "df-setting", builder: "auto" }, dockerfileApp("third version"));
    expect(app.status).toBe("running");
    expect(app.builder).toBe("auto");
    expect(log).toContain("==> Runtime node, detected: node");
    expect(log).toContain('the Dockerfile is not used: builder "auto" builds it only when nothing is detected; set builder to "dockerfile" to use it');
    expect(await (await viaProxy(server, app.subdomain)).text()).toBe("runtime plan");
  });
});

describe("images a Dockerfile may name", () => {
  test("an image named by a short ID fails the build with the reason, before any step runs", async () => {
    const [node] = await dockerJson("image", "inspect", "platform-test/node:latest");
    const shortId = String(node.Id).replace("sha256:", "").slice(0, 12);
    const { app, build, log } = await deploy({ name: "df-by-id", builder: "dockerfile" }, { Dockerfile: `FROM ${shortId}\nRUN echo "step ran"\nCMD ["node"]\n` });
    expect(build.status).toBe("failed");
    expect(app.status).toBe("failed");
    expect(log).toContain(`==> Build failed: the Dockerfile's line "FROM ${shortId}" names an image by its ID`);
    expect(log).not.toContain("step ran");
  });

  test("an image the platform made is refused by its label, whatever name it has", async () => {
    const image = `${uniqueName("platform-test/made-by-platform")}:latest`;
    const container = (await dockerCli("create", "platform-test/node:latest")).trim();
    try {
      await dockerCli("commit", "--change", "LABEL platform.managed=true", container, image);
      const { build, log } = await deploy({ name: "df-managed", builder: "dockerfile" }, { Dockerfile: `FROM ${image}\nRUN echo "step ran"\nCMD ["node"]\n` });
      expect(build.status).toBe("failed");
      expect(log).toContain(`==> Build failed: the Dockerfile's line "FROM ${image}" names an image the platform made: start from a base image instead`);
      expect(log).not.toContain("step ran");
    } finally {
      await dockerCli("rm", container);
      await dockerCli("rmi", image).catch(() => {});
    }
  });
});

test("a RUN step runs on the workspace network, and a cancel stops it", async () => {
  const response = await deployZip(
    server,
    key,
    { name: "df-endless", runtime: "node", memoryMB: "128", builder: "dockerfile" },
    appZip({ Dockerfile: 'FROM platform-test/node:latest\nRUN echo "step started" && sleep 600\n' }),
  );
  expect(response.status).toBe(202);
  const { id: appId } = response.body.app;
  const { buildId } = response.body;
  const network = `platform-${workspaceId.toLowerCase()}`;
  // The engine's builder makes a RUN step's container itself: on the network, without the platform's labels.
  const stepContainers = async (): Promise<string[]> => {
    const listed = await dockerCli("ps", "--no-trunc", "--filter", `network=${network}`, "--format", '{{.ID}} {{.Label "platform.managed"}}{{.Command}}');
    return listed.split("\n").filter((line) => line.includes("sleep 600")).map((line) => line.split(" ")[0]!);
  };
  let seen: string[] = [];
  for (const deadline = Date.now() + 60_000; Date.now() < deadline && !seen.length; await Bun.sleep(250)) seen = await stepContainers();
  expect(seen).toHaveLength(1);
  const [step] = await dockerJson("inspect", seen[0]!);
  expect(step.Config.Labels?.["platform.managed"]).toBeUndefined();
  expect(step.HostConfig.Memory).toBeGreaterThan(0);
  expect(step.HostConfig.CpuQuota).toBeGreaterThan(0);

  const canceled = await server.request("POST", `/api/apps/${appId}/builds/${buildId}/cancel`, { key });
  expect(canceled.status).toBe(202);
  let left = seen;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline && left.length; await Bun.sleep(250)) left = await stepContainers();
  expect(left).toEqual([]);
  const { log } = (await server.request("GET", `/api/apps/${appId}/builds/${buildId}`, { key })).body;
  expect(log).toContain("step started");
  expect(log).toContain("==> Build canceled by a user");
});
