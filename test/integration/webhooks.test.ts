// Webhook deliveries from the outside, as a tenant who knows more than it should would send them:
// the secret every tenant once shared, replays, another repository's pushes, unsigned and
// over-long bodies. Builds here fail at once (the git base URL is a loopback port nothing listens on): what is
// checked is whether a deploy was started, in the app's builds and its audit log.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { TestServer } from "../helpers/server";
import { freePort } from "../helpers/ports";
import { deleteAllApps } from "../helpers/apps";
import { RawConnection } from "../helpers/raw-http";

const OLD_SHARED_SECRET = "the-secret-every-tenant-knew";
/** The GitHub App's own webhook secret, which only the administrator holds. */
const APP_WEBHOOK_SECRET = "the-github-apps-own-webhook-secret";

let server: TestServer;
let ownerKey: string;
let otherTenantKey: string;

beforeAll(async () => {
  server = await TestServer.start({
    PLATFORM_GIT_BASE_URL: `http://127.0.0.1:${freePort()}`,
    PLATFORM_GITHUB_WEBHOOK_SECRET: OLD_SHARED_SECRET,
    PLATFORM_GITHUB_APP_WEBHOOK_SECRET: APP_WEBHOOK_SECRET,
  });
  ownerKey = (await server.createKey("owner", "victims")).key;
  otherTenantKey = (await server.createKey("tenant", "attackers")).key;
});

afterAll(async () => {
  await deleteAllApps(server, ownerKey);
  await deleteAllApps(server, otherTenantKey);
  await server.stop();
}, 60_000);

const pushPayload = (fields: { branch?: string; id?: number | null; owner?: string; name?: string; after?: string } = {}) => ({
  ref: `refs/heads/${fields.branch ?? "main"}`,
  after: fields.after ?? crypto.randomUUID(),
  repository: { ...(fields.id !== null && { id: fields.id ?? 5150 }), name: fields.name ?? "private-site", owner: { login: fields.owner ?? "victim-org" } },
});

function deliver(path: string, secret: string, payload: unknown, options: { deliveryId?: string; event?: string } = {}) {
  const body = JSON.stringify(payload);
  return server.request("POST", path, {
    body,
    headers: {
      "content-type": "application/json",
      "x-github-event": options.event ?? "push",
      "x-github-delivery": options.deliveryId ?? crypto.randomUUID(),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    },
  });
}

/** The answer without the delivery id it echoes: what tells one outcome from another, if anything does. */
const shapeOf = (answer: { status: number; body: any }) => JSON.stringify({ status: answer.status, body: answer.body, id: undefined }).replaceAll(/"id":"[^"]*"/g, '"id":"…"');

async function pushDeploys(appId: string): Promise<number> {
  const events = (await server.request("GET", "/api/organization/audit-log", { key: ownerKey })).body.events as any[];
  return events.filter((event) => event.action === "app.deployed_by_push" && event.target === `victim-site (${appId})`).length;
}

async function pushBuilds(appId: string): Promise<number> {
  return ((await server.request("GET", `/api/apps/${appId}/builds`, { key: ownerKey })).body.builds as any[]).filter((build) => build.trigger === "push").length;
}

describe("an app's own webhook", () => {
  let appId: string;
  let webhook: { url: string; secret: string };
  let path: string;

  beforeAll(async () => {
    const deployed = await server.request("POST", "/api/apps/deploy-from-repo", {
      key: ownerKey,
      body: { name: "victim-site", runtime: "node", memoryMB: 64, autoDeploy: true, repository: { id: "5150", owner: "victim-org", name: "private-site", branch: "main" } },
    });
    expect(deployed.status).toBe(202);
    appId = deployed.body.app.id;
    const answer = await server.request("GET", `/api/apps/${appId}/webhook`, { key: ownerKey });
    expect(answer.status).toBe(200);
    webhook = answer.body.webhook;
    path = new URL(webhook.url).pathname;
  });

  test("its URL names the app, its secret is the app's own and stays until replaced", async () => {
    expect(webhook.url).toBe(`${server.baseUrl}/api/webhooks/github/${appId}`);
    expect(webhook.secret).toMatch(/^[A-Za-z0-9]{40}$/);
    expect((await server.request("GET", `/api/apps/${appId}/webhook`, { key: ownerKey })).body.webhook.secret).toBe(webhook.secret);
    const events = (await server.request("GET", "/api/organization/audit-log", { key: ownerKey })).body.events as any[];
    expect(events.some((event) => event.action === "app.webhook_secret_read" && event.target === appId)).toBe(true);
    // Another workspace cannot read it.
    expect((await server.request("GET", `/api/apps/${appId}/webhook`, { key: otherTenantKey })).status).toBe(404);
  });

  test("a push signed with the app's secret deploys it once; a replay, by delivery id or by body, deploys nothing more", async () => {
    const payload = pushPayload();
    const deliveryId = crypto.randomUUID();
    const first = await deliver(path, webhook.secret, payload, { deliveryId });
    expect(first.status).toBe(202);
    expect(first.body.delivery).toEqual({ id: deliveryId, status: "received" });
    expect(await pushDeploys(appId)).toBe(1);
    expect(await pushBuilds(appId)).toBeGreaterThanOrEqual(1);

    const sameId = await deliver(path, webhook.secret, pushPayload(), { deliveryId });
    const sameBody = await deliver(path, webhook.secret, payload);
    expect(shapeOf(sameId)).toBe(shapeOf(first));
    expect(shapeOf(sameBody)).toBe(shapeOf(first));
    expect(await pushDeploys(appId)).toBe(1);
  });

  test("a push whose repository id differs, or is missing, deploys nothing and is answered as one that deploys", async () => {
    const deploying = await deliver(path, webhook.secret, pushPayload());
    expect(await pushDeploys(appId)).toBe(2);
    for (const payload of [pushPayload({ id: 9999 }), pushPayload({ id: null }), pushPayload({ branch: "other" }), pushPayload({ name: "another-repo" })]) {
      expect(shapeOf(await deliver(path, webhook.secret, payload))).toBe(shapeOf(deploying));
    }
    expect(shapeOf(await deliver(path, webhook.secret, { zen: "hi" }, { event: "ping" }))).toBe(shapeOf(deploying));
    expect(await pushDeploys(appId)).toBe(2);
  });

  test("a wrong signature and an unknown app get the same answer", async () => {
    const wrong = await deliver(path, "not-the-secret", pushPayload());
    const unknown = await deliver("/api/webhooks/github/app_doesNotExist0000000", webhook.secret, pushPayload());
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe("INVALID_SIGNATURE");
    expect(shapeOf(unknown)).toBe(shapeOf(wrong));
    expect(await pushDeploys(appId)).toBe(2);
  });

  test("a replaced secret signs no more", async () => {
    const rotated = await server.request("POST", `/api/apps/${appId}/webhook`, { key: ownerKey });
    expect(rotated.body.webhook.secret).not.toBe(webhook.secret);
    expect((await deliver(path, webhook.secret, pushPayload())).status).toBe(401);
    expect((await deliver(path, rotated.body.webhook.secret, pushPayload())).status).toBe(202);
    webhook = rotated.body.webhook;
    expect(await pushDeploys(appId)).toBe(3);
  });
});

describe("the secret every tenant once shared", () => {
  test("a tenant who knows it cannot deploy another workspace's app, and learns nothing of who follows what", async () => {
    const deployed = await server.request("POST", "/api/apps/deploy-from-repo", {
      key: ownerKey,
      body: { name: "victim-site-2", runtime: "node", memoryMB: 64, autoDeploy: true, repository: { id: "6160", owner: "victim-org", name: "other-site", branch: "main" } },
    });
    const appId = deployed.body.app.id;
    const before = await pushBuilds(appId);
    const followedPush = pushPayload({ id: 6160, name: "other-site" });
    const unknownPush = pushPayload({ owner: "nobody", name: "nothing" });
    // Signed with the old shared secret: refused, whichever repository it names.
    const followed = await deliver("/api/webhooks/github", OLD_SHARED_SECRET, followedPush);
    const unknown = await deliver("/api/webhooks/github", OLD_SHARED_SECRET, unknownPush);
    expect(followed.status).toBe(401);
    expect(shapeOf(followed)).toBe(shapeOf(unknown));
    // Signed with the GitHub App's secret: received alike, whether a workspace follows the repository or not.
    const followedSigned = await deliver("/api/webhooks/github", APP_WEBHOOK_SECRET, followedPush);
    const unknownSigned = await deliver("/api/webhooks/github", APP_WEBHOOK_SECRET, unknownPush);
    expect(followedSigned.status).toBe(202);
    expect(shapeOf(followedSigned)).toBe(shapeOf(unknownSigned));
    expect((await deliver(`/api/webhooks/github/${appId}`, OLD_SHARED_SECRET, followedPush)).status).toBe(401);
    expect(await pushBuilds(appId)).toBe(before);
    expect(server.output).toContain("PLATFORM_GITHUB_WEBHOOK_SECRET is no longer read");
  });
});

describe("what is refused before the body is read", () => {
  /** Sends only the head of a request (no body): an answer means the server did not wait for the body. */
  async function answerToHead(path: string, headers: Record<string, string>) {
    const connection = await RawConnection.open(Number(new URL(server.baseUrl).port));
    try {
      const head = Object.entries({ host: "127.0.0.1", "content-type": "application/json", ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join("");
      await connection.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
      return await connection.readResponse({ timeoutMs: 3_000 });
    } finally {
      connection.close();
    }
  }

  // The GitHub App's webhook, and an app's.
  const paths = ["/api/webhooks/github", "/api/webhooks/github/app_anything0000000000000"];

  test("a 10 MB body without a signature is refused at once", async () => {
    for (const path of paths) {
      const answer = await answerToHead(path, { "content-length": String(10 * 1024 * 1024), "x-github-delivery": "d-1" });
      expect(answer.status).toBe(413);
      expect(answer.json().code).toBe("PAYLOAD_TOO_LARGE");
    }
  });

  test("a small body without a signature, or with one of the wrong shape, is refused at once", async () => {
    for (const path of paths) {
      for (const signature of [undefined, "sha1=abcdef", `sha256=${"z".repeat(64)}`]) {
        const answer = await answerToHead(path, { "content-length": "100000", "x-github-delivery": "d-2", ...(signature && { "x-hub-signature-256": signature }) });
        expect(answer.status).toBe(401);
        expect(answer.json().code).toBe("INVALID_SIGNATURE");
      }
    }
  });

  test("a body past the 5 MB cap is refused, even with a signature of the right shape", async () => {
    const body = "x".repeat(6 * 1024 * 1024);
    for (const path of paths) {
      const answer = await fetch(`${server.baseUrl}${path}`, {
        method: "POST",
        headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}`, "x-github-delivery": "d-3" },
        body,
      });
      expect(answer.status).toBe(413);
    }
  });
});

describe("the audit log", () => {
  test("a read of the deploy-hook URL, and each deploy a call of it starts, are recorded", async () => {
    const deployed = await server.request("POST", "/api/apps/deploy-from-repo", {
      key: ownerKey,
      body: { name: "hooked-site", runtime: "node", memoryMB: 64, repository: { id: "7170", owner: "victim-org", name: "hooked", branch: "main" } },
    });
    const appId = deployed.body.app.id;
    const { url } = (await server.request("GET", `/api/apps/${appId}/deploy-hook`, { key: ownerKey })).body.deployHook;
    expect((await fetch(url, { method: "POST" })).status).toBe(202);
    const events = ((await server.request("GET", "/api/organization/audit-log", { key: ownerKey })).body.events as any[]).filter((event) => event.target?.includes(appId));
    const read = events.find((event) => event.action === "app.deploy_hook_read");
    expect(read.actor.type).toBe("api_key");
    const called = events.find((event) => event.action === "app.deployed_by_hook");
    expect(called).toMatchObject({ actor: { type: "anonymous", id: null }, target: `hooked-site (${appId})`, clientAddress: "127.0.0.1" });
    // A wrong URL starts nothing and records nothing.
    expect((await fetch(`${url.slice(0, -3)}xyz`, { method: "POST" })).status).toBe(401);
    const after = ((await server.request("GET", "/api/organization/audit-log", { key: ownerKey })).body.events as any[]).filter((event) => event.action === "app.deployed_by_hook" && event.target?.includes(appId));
    expect(after).toHaveLength(1);
  });
});
