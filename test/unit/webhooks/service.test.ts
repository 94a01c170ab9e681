// What a signed push deploys when starting one app's deploy fails: the delivery is remembered as
// soon as its signature checks out (GitHub's retry is a replay), so every other app that follows
// the push still gets its deploy, the failure is logged, and the answer stays the same.
import { afterEach, beforeEach, expect, spyOn, test } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Config } from "../../../src/config";
import { SecretBox } from "../../../src/crypto/secrets";
import { openDatabase, type PlatformDb } from "../../../src/db";
import { apps, workspaces } from "../../../src/db/schema";
import { listAuditEvents } from "../../../src/audit/service";
import type { AppRow } from "../../../src/apps/deployer";
import type { AppsService } from "../../../src/apps/service";
import { bindInstallation } from "../../../src/git/installations";
import { Webhooks, type Delivery } from "../../../src/webhooks/service";
import { tempDir } from "../../helpers/temp";

const APP_WEBHOOK_SECRET = "the-github-apps-own-webhook-secret";
const APP_IDS = ["app_1", "app_2", "app_3"];

let db: PlatformDb;
let webhooks: Webhooks;
/** The apps whose deploy was asked for, in order; the first such call fails. */
let deployCalls: string[];
let logged: ReturnType<typeof spyOn>;

beforeEach(() => {
  db = openDatabase(join(tempDir(), "platform.db"));
  db.insert(workspaces).values({ id: "ws_1", name: "one", createdAt: 0 }).run();
  bindInstallation(db, { installationId: "4242", workspaceId: "ws_1", userId: "usr_1", now: 0 });
  for (const id of APP_IDS) {
    db.insert(apps)
      .values({
        id, workspaceId: "ws_1", name: id, runtime: "node", status: "running", memoryMB: 64, startupCommand: "auto", autoRestart: true,
        autoDeploy: true, machineId: "local", createdAt: 0, updatedAt: 0, repoOwner: "acme", repoName: "site", repoBranch: "main", repoInstallationId: "4242",
      })
      .run();
  }
  deployCalls = [];
  const appsService = {
    get: (_workspaceId: string, appId: string) => db.select().from(apps).all().find((app) => app.id === appId),
    repository: {
      deployHead(app: AppRow) {
        deployCalls.push(app.id);
        if (deployCalls.length === 1) throw new Error("the build queue could not be written");
        return { buildId: `bld_${app.id}`, coalesced: false };
      },
    },
  } as unknown as AppsService;
  const config = { git: { githubAppWebhookSecret: APP_WEBHOOK_SECRET } } as Pick<Config, "git">;
  webhooks = new Webhooks({ db, config, secrets: new SecretBox(randomBytes(32)), apps: appsService });
  logged = spyOn(console, "error").mockImplementation(() => {});
});

afterEach(() => logged.mockRestore());

function signedPush(secret: string, installationId?: number): Delivery {
  const payload = { ref: "refs/heads/main", after: crypto.randomUUID(), repository: { name: "site", owner: { login: "acme" } }, ...(installationId && { installation: { id: installationId } }) };
  const body = new TextEncoder().encode(JSON.stringify(payload));
  const signature = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  return { headers: { event: "push", deliveryId: crypto.randomUUID(), signature }, body, contentType: "application/json", clientAddress: null };
}

const pushDeployed = () => listAuditEvents(db, "ws_1", { limit: 50 }).filter((event) => event.action === "app.deployed_by_push").map((event) => event.target);

test("the GitHub App's push deploys every app of the installation though the first deploy fails", () => {
  expect(() => webhooks.receiveForGitHubApp(signedPush(APP_WEBHOOK_SECRET, 4242))).not.toThrow();
  expect(deployCalls.toSorted()).toEqual(APP_IDS);
  expect(pushDeployed()).toHaveLength(2);
  expect(pushDeployed()).not.toContain(`${deployCalls[0]} (${deployCalls[0]})`);
  expect(logged).toHaveBeenCalledTimes(1);
  expect(String(logged.mock.calls[0]![0])).toContain(`the deploy of app ${deployCalls[0]} did not start`);
});

test("an app's own webhook answers alike when its deploy fails to start", () => {
  const secret = webhooks.appSecret("ws_1", "app_2");
  expect(() => webhooks.receiveForApp("app_2", signedPush(secret))).not.toThrow();
  expect(deployCalls).toEqual(["app_2"]);
  expect(logged).toHaveBeenCalledTimes(1);
});
