// Dockerfile builds never reach the host's network: the recipes of issue 32 (a directive with a
// non-breaking space, a line ending in `\\`, an ONBUILD trigger of a base image, a registry at a
// loopback address, a registry not on the list whose token realm points at the host's loopback,
// image-ID prefixes hidden the same ways) each fail the build with a clear reason while a
// loopback-only listener on the host sees no connection; a normal multi-stage
// Dockerfile still builds, from images pinned by ID, and serves; a registry the administrator
// lists is pulled from by the platform, and a failed pull is a clear build error; a Dockerfile of
// the largest size, shaped to be slow to read, does not stall the server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { dockerCli, dockerJson, uniqueName } from "../../helpers/docker";
import { startLagProbe } from "../../helpers/event-loop-lag";
import { loopbackWitness, type LoopbackWitness } from "../../helpers/loopback-witness";

setDefaultTimeout(120_000);

const MAX_LAG_MS = 100;
const REMOTE = "fetches a remote source: the engine would fetch it from the platform's own network";
const BY_ID = "names an image by its ID";

let server: TestServer;
let key: string;
let witness: LoopbackWitness;

beforeAll(async () => {
  witness = loopbackWitness();
  server = await TestServer.start();
  ({ key } = await server.createKey("dockerfile-egress"));
});
afterAll(async () => {
  witness.stop();
  await deleteAllApps(server, key);
  await server.stop();
}, 60_000);

async function build(name: string, files: Record<string, string>) {
  const response = await deployZip(server, key, { name, runtime: "node", memoryMB: "128", builder: "dockerfile" }, appZip(files));
  expect(response.status).toBe(202);
  const app = await waitForStatus(server, key, response.body.app.id, ["running", "failed"]);
  const details = (await server.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key })).body;
  return { app, status: details.build.status as string, log: details.log as string };
}

/** The build failed with `reason`, and nothing reached the listener: no connection, no secret in the log. */
async function expectRefusedUnreached(name: string, dockerfile: string, reason: string) {
  const before = witness.connections();
  const { status, log } = await build(name, { Dockerfile: dockerfile });
  expect(witness.connections()).toBe(before);
  expect(log).not.toContain(witness.secret);
  expect(status).toBe("failed");
  expect(log).toContain(reason);
  return log;
}

const shortId = async (image: string) => String((await dockerJson("image", "inspect", image))[0].Id).replace("sha256:", "").slice(0, 12);

describe("recipes that reached the host's loopback", () => {
  test("`# escape<U+00A0>=`` is a comment to the engine: the line after a trailing backtick is its own ADD, refused", async () => {
    const url = `http://127.0.0.1:${witness.port}/x`;
    const log = await expectRefusedUnreached(
      "egress-escape",
      `# escape\u00a0=\`\nFROM platform-test/node:latest\nRUN true # hidden \`\nADD ${url} /p\nRUN cat /p\n`,
      `==> Build failed: the Dockerfile's line "ADD ${url} /p" ${REMOTE}`,
    );
    expect(log).not.toContain("Step 1/");
  });

  test("a line ending in `\\\\` is refused, and so is the ADD after it", async () => {
    const url = `http://127.0.0.1:${witness.port}/x`;
    const log = await expectRefusedUnreached(
      "egress-backslashes",
      `FROM platform-test/node:latest\nRUN true \\\\\nADD ${url} /p\nRUN cat /p\n`,
      "==> Build failed: 2 lines of the Dockerfile were refused (listed above)",
    );
    expect(log).toContain(`    refused: the Dockerfile's line "RUN true \\\\" ends in two escape characters`);
    expect(log).toContain(`    refused: the Dockerfile's line "ADD ${url} /p" ${REMOTE}`);
  });

  test("a base image with an ONBUILD trigger is refused before anything runs", async () => {
    const image = `${uniqueName("platform-test/onbuild")}:latest`;
    const container = (await dockerCli("create", "platform-test/node:latest")).trim();
    try {
      await dockerCli("commit", "--change", `ONBUILD ADD http://127.0.0.1:${witness.port}/x /p`, container, image);
      const log = await expectRefusedUnreached(
        "egress-onbuild",
        `FROM ${image}\nRUN cat /p\nCMD ["node"]\n`,
        `==> Build failed: the Dockerfile's line "FROM ${image}" names the image ${image}, which has ONBUILD instructions (ADD http://127.0.0.1:${witness.port}/x /p)`,
      );
      expect(log).not.toContain("Step 1/");
    } finally {
      await dockerCli("rm", container);
      await dockerCli("rmi", image).catch(() => {});
    }
  });

  test("a registry at a loopback address is refused without a connection", async () => {
    await expectRefusedUnreached(
      "egress-registry",
      `FROM 127.0.0.1:${witness.port}/x\nCMD ["node"]\n`,
      `==> Build failed: the Dockerfile's line "FROM 127.0.0.1:${witness.port}/x" names the registry 127.0.0.1:${witness.port} by its IP address`,
    );
    await expectRefusedUnreached(
      "egress-registry",
      `FROM platform-test/node:latest\nCOPY --from=localhost:${witness.port}/x /a /b\n`,
      `names the registry localhost:${witness.port}, on the platform's own machine`,
    );
  });

  test("a registry not on the list is refused before any pull: neither it nor the token realm it names is reached", async () => {
    const realm = loopbackWitness();
    const registry = loopbackWitness({ tokenRealm: `http://127.0.0.1:${realm.port}/token` });
    try {
      const host = `registry.test-tenant.example:${registry.port}`;
      const { status, log } = await build("egress-unlisted-registry", { Dockerfile: `FROM ${host}/x\nCMD ["node"]\n` });
      expect(status).toBe("failed");
      expect(log).toContain(
        `==> Build failed: the Dockerfile's line "FROM ${host}/x" names the registry ${host}, which builds do not pull from: ` +
          "only docker.io, registry-1.docker.io, ghcr.io, quay.io, gcr.io, registry.gitlab.com, public.ecr.aws, mcr.microsoft.com and the registries listed in PLATFORM_BUILD_REGISTRIES",
      );
      expect(log).not.toContain("pulling");
      expect(log).not.toContain(registry.secret);
      expect(log).not.toContain(realm.secret);
      expect(registry.connections()).toBe(0);
      expect(realm.connections()).toBe(0);
    } finally {
      registry.stop();
      realm.stop();
    }
  });

  test("image-ID prefixes in FROM and COPY --from are refused, also behind a line ending in `\\\\`", async () => {
    const [python, bun] = [await shortId("platform-test/python:latest"), await shortId("platform-test/bun:latest")];
    const { status, log } = await build("egress-by-id", {
      Dockerfile: `FROM platform-test/node:latest\nRUN true \\\\\nFROM ${python}\nRUN true \\\\\nCOPY --from=${bun} /etc/os-release /stolen\n`,
    });
    expect(status).toBe("failed");
    expect(log).toContain(`    refused: the Dockerfile's line "FROM ${python}" ${BY_ID}`);
    expect(log).toContain(`    refused: the Dockerfile's line "COPY --from=${bun} /etc/os-release /stolen" ${BY_ID}`);
    expect(log).toContain("==> Build failed: 4 lines of the Dockerfile were refused (listed above)");
    expect(log).not.toContain("Step 1/");
  });
});

test("a multi-stage Dockerfile (stages by name and index, ARG, COPY --from a stage or an image) builds from pinned images and serves", async () => {
  const [node, python] = await dockerJson("image", "inspect", "platform-test/node:latest", "platform-test/python:latest");
  const serve = `import { readFileSync } from "node:fs";
import { createServer } from "node:http";
createServer((req, res) => res.end(readFileSync("/srv/message.txt", "utf8").trim() + " / " + readFileSync("/srv/again.txt", "utf8").trim())).listen(Number(process.env.PORT));
`;
  const dockerfile = [
    "# syntax=docker/dockerfile:1",
    "ARG GREETING=hello",
    "FROM platform-test/node:latest AS Build",
    "ARG GREETING",
    "WORKDIR /out",
    "RUN echo \"$GREETING from the build stage\" \\",
    "    > message.txt",
    "",
    "FROM platform-test/node:latest",
    "WORKDIR /srv",
    "COPY --from=build /out/message.txt ./",
    "COPY --from=0 /out/message.txt again.txt",
    "COPY --from=platform-test/python:latest /etc/os-release python-os-release",
    "COPY serve.mjs .",
    'CMD ["node", "serve.mjs"]',
  ].join("\n");
  const { app, status, log } = await build("egress-multi-stage", { Dockerfile: dockerfile, "serve.mjs": serve });
  if (status !== "succeeded") throw new Error(`build ${status}:\n${log}`);
  expect(log).toContain(`    platform-test/node:latest: image ${String(node.Id).slice(7, 19)}, pinned by its ID`);
  expect(log).toMatch(new RegExp(`Step 2/\\d+ : FROM ${node.Id} AS build`));
  expect(log).toContain(`COPY --from=${python.Id} ["/etc/os-release","python-os-release"]`);
  expect(app.status).toBe("running");
  expect(await (await viaProxy(server, app.subdomain)).text()).toBe("hello from the build stage / hello from the build stage");
  // The build stage's images (its source inside) are not left behind untagged.
  const stepImages = [...log.matchAll(/^ ---> ([0-9a-f]{12})$/gm)].map((match) => match[1]!);
  const dangling = (await dockerCli("images", "-q", "--no-trunc", "--filter", "dangling=true")).trim().split("\n");
  expect(stepImages.filter((id) => dangling.some((full) => full.startsWith(`sha256:${id}`)))).toEqual([]);
});

test("a registry listed in PLATFORM_BUILD_REGISTRIES is pulled from by the platform, token realm included; a failed pull fails the build clearly", async () => {
  const registryWitness = loopbackWitness({ tokenRealm: `http://127.0.0.1:${witness.port}/token` });
  const registry = `127.0.0.1:${registryWitness.port}`;
  const listing = await TestServer.start({ PLATFORM_BUILD_REGISTRIES: registry });
  try {
    const { key: listingKey } = await listing.createKey("dockerfile-registries");
    const response = await deployZip(listing, listingKey, { name: "egress-listed", runtime: "node", memoryMB: "128", builder: "dockerfile" }, appZip({ Dockerfile: `FROM ${registry}/team/base:1\n` }));
    expect(response.status).toBe(202);
    const app = await waitForStatus(listing, listingKey, response.body.app.id, ["running", "failed"]);
    const { log } = (await listing.request("GET", `/api/apps/${app.id}/builds/${response.body.buildId}`, { key: listingKey })).body;
    expect(app.status).toBe("failed");
    expect(log).toContain(`    pulling ${registry}/team/base:1`);
    expect(log).toContain(`==> Build failed: the Dockerfile's line "FROM ${registry}/team/base:1" names the image ${registry}/team/base:1, which could not be pulled: `);
    expect(log).not.toContain("Step 1/");
    // What the registry stub stands for: the engine follows the token realm a registry names.
    expect(registryWitness.connections()).toBeGreaterThan(0);
    expect(witness.connections()).toBeGreaterThan(0);
    await deleteAllApps(listing, listingKey);
  } finally {
    registryWitness.stop();
    await listing.stop();
  }
});

test("a Dockerfile of the largest size, thousands of stages, is read without stalling the server", async () => {
  const stages = Array.from({ length: 2100 }, (_, index) => `FROM platform-test/node:latest AS s${index}\nCOPY --from=s0 /a /b`).join("\n");
  const dockerfile = `${stages}\nADD http://127.0.0.1:${witness.port}/x /p\n`;
  expect(dockerfile.length).toBeGreaterThan(120 * 1024);
  expect(dockerfile.length).toBeLessThan(128 * 1024);
  const probe = startLagProbe(server);
  const { status, log } = await build("egress-large", { Dockerfile: dockerfile });
  const maxLagMs = await probe.stop();
  expect(status).toBe("failed");
  expect(log).toContain(`==> Build failed: the Dockerfile's line "ADD http://127.0.0.1:${witness.port}/x /p" ${REMOTE}`);
  expect(maxLagMs).toBeLessThan(MAX_LAG_MS);
});
