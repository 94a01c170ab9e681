// Helpers for app tests: ZIPs made in the test, deploys through the real API, waiting for a
// status, and requests to an app through the platform's public proxy.
import { makeCertificate } from "./certificates";
import { zipSync, strToU8 } from "fflate";
import type { TestServer } from "./server";
import type { AuthenticatedRoute, Tenant } from "./auth-matrix";
import { removeWorkspaceNetworks } from "./databases";
import { addVerifiedDomain, claimDomain, dnsServerOf } from "./domains";

export function appZip(files: Record<string, string>): Uint8Array<ArrayBuffer> {
  return zipSync(Object.fromEntries(Object.entries(files).map(([path, text]) => [path, strToU8(text)]))) as Uint8Array<ArrayBuffer>;
}

export async function deployZip(
  server: TestServer,
  key: string,
  fields: Record<string, string>,
  zip: Uint8Array<ArrayBuffer>,
): Promise<{ status: number; headers: Headers; body: any }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  form.set("file", new File([zip], "app.zip", { type: "application/zip" }));
  return server.request("POST", "/api/apps/deploy", { key, body: form });
}

/** A static site (one index.html) deployed and running: its app id. */
export async function deployRunningSite(server: TestServer, key: string, name: string, html: string): Promise<string> {
  const response = await deployZip(server, key, { name, runtime: "node", memoryMB: "64" }, appZip({ "index.html": html }));
  if (response.status !== 202) throw new Error(`deploy of ${name} refused: ${JSON.stringify(response.body)}`);
  await waitForStatus(server, key, response.body.app.id, ["running"]);
  return response.body.app.id;
}

/** Polls the app until its status is one of `wanted` (or a final one); returns the app. */
export async function waitForStatus(server: TestServer, key: string, appId: string, wanted: string[], timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  let app: any;
  while (Date.now() < deadline) {
    app = (await server.request("GET", `/api/apps/${appId}`, { key })).body.app;
    if (wanted.includes(app?.status)) return app;
    await Bun.sleep(250);
  }
  throw new Error(`app ${appId} did not reach ${wanted.join("/")}: ${JSON.stringify(app)}`);
}

/**
 * Deletes every app of the key's workspace and waits until none is listed: DELETE answers 202 and
 * the removal goes on in the background, and a server stopped before it ends leaves containers
 * behind (which the global teardown in test/setup.ts reports). Returns at `timeoutMs` regardless.
 */
export async function deleteAllApps(server: TestServer, key: string, timeoutMs = 30_000) {
  const listed = async (): Promise<{ id: string }[]> => (await server.request("GET", "/api/apps/", { key })).body.apps ?? [];
  for (const { id } of await listed()) await server.request("DELETE", `/api/apps/${id}`, { key });
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline && (await listed()).length > 0; ) await Bun.sleep(100);
}

/** A request to an app through the public proxy, by its subdomain. */
export function viaProxy(server: TestServer, subdomain: string, path = "/", init: RequestInit = {}) {
  return fetch(`http://127.0.0.1:${server.proxyPort}${path}`, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), host: `${subdomain}.localhost` },
  });
}

// ---- the auth matrix's app routes ----------------------------------------------------------


const matrixApps = new Map<string, { appId: string; buildId: string }>();
let matrixAppCount = 0;

/** A running static app of `owner` (reused while it exists: DELETE takes it away). */
const appOf = async (server: TestServer, owner: Tenant) => {
  const cached = matrixApps.get(owner.key);
  if (cached && (await server.request("GET", `/api/apps/${cached.appId}`, { key: owner.key })).status === 200) return cached;
  const response = await deployZip(server, owner.key, { name: `matrix-app-${++matrixAppCount}`, runtime: "node", memoryMB: "64" }, appZip({ "index.html": "matrix" }));
  if (response.status !== 202) throw new Error(`could not deploy a matrix app: ${JSON.stringify(response.body)}`);
  await waitForStatus(server, owner.key, response.body.app.id, ["running"]);
  const made = { appId: response.body.app.id as string, buildId: response.body.buildId as string };
  matrixApps.set(owner.key, made);
  return made;
};

const matrixBuildWorkspaces = new Set<string>();

/** Removes the workspace networks the matrix's build containers joined (call it after the matrix's tests). */
export function removeMatrixBuildNetworks() {
  removeWorkspaceNetworks(...matrixBuildWorkspaces);
  matrixBuildWorkspaces.clear();
}

/** A build of `owner` that has not ended (its script sleeps, then fails: nothing is left if it is never canceled). */
const unfinishedBuildOf = async (server: TestServer, owner: Tenant) => {
  matrixBuildWorkspaces.add(owner.workspaceId);
  const slow = appZip({ "package.json": JSON.stringify({ name: "slow", scripts: { build: "sleep 30; exit 1", start: "node x.js" } }) });
  const response = await deployZip(server, owner.key, { name: `matrix-build-${++matrixAppCount}`, runtime: "node", memoryMB: "64" }, slow);
  if (response.status !== 202) throw new Error(`could not deploy a matrix build: ${JSON.stringify(response.body)}`);
  return { appId: response.body.app.id as string, buildId: response.body.buildId as string };
};

let matrixFileCount = 0;
const uniqueName = (prefix: string) => `${prefix}-${++matrixFileCount}`;

/** A file of its own in the running matrix app of `owner`, for the routes that move or delete one. */
const appFileOf = async (server: TestServer, owner: Tenant) => {
  const { appId } = await appOf(server, owner);
  const path = `${uniqueName("matrix-file")}.txt`;
  const made = await server.request("POST", `/api/apps/${appId}/fs/file`, { key: owner.key, body: { path, content: "matrix" } });
  if (made.status !== 201) throw new Error(`could not make a matrix file: ${JSON.stringify(made.body)}`);
  return { appId, path };
};

/** A variable of the owner's matrix app, for the route that unsets it. */
const envVarOf = async (server: TestServer, owner: Tenant) => {
  const { appId } = await appOf(server, owner);
  const name = uniqueName("MATRIX").replace(/[^A-Za-z0-9_]/g, "_");
  const set = await server.request("PUT", `/api/apps/${appId}/env`, { key: owner.key, body: { envVars: { [name]: "matrix" } } });
  if (set.status !== 200) throw new Error(`could not set a matrix variable: ${JSON.stringify(set.body)}`);
  return { appId, name };
};

/** A domain of the owner's matrix app (pending), for the routes that read, check or remove it. */
const appDomainOf = async (server: TestServer, owner: Tenant) => {
  const { appId } = await appOf(server, owner);
  const made = await claimDomain(server, owner.key, appId, `${uniqueName("matrix")}.example.test`);
  if (made.status !== 201) throw new Error(`could not add a matrix domain: ${JSON.stringify(made.body)}`);
  return { appId, domainId: made.body.domain.id as string, domain: made.body.domain.domain as string };
};

/** A verified domain of the owner's matrix app with a certificate made for it (params `certificate`, `privateKey`), not uploaded yet. */
const appDomainAndCertificateOf = async (server: TestServer, owner: Tenant) => {
  const { appId } = await appOf(server, owner);
  const verified = await addVerifiedDomain(server, owner.key, dnsServerOf(server), appId, `${uniqueName("matrix")}.example.test`);
  const params = { appId, domainId: verified.id as string, domain: verified.domain as string };
  const made = await makeCertificate({ names: [params.domain] });
  return { ...params, certificate: made.chainPem, privateKey: made.keyPem };
};

/** A domain of the owner's matrix app serving an uploaded certificate, for the route that removes it. */
const uploadedCertificateOf = async (server: TestServer, owner: Tenant) => {
  const params = await appDomainAndCertificateOf(server, owner);
  const uploaded = await server.request("PUT", `/api/apps/${params.appId}/domains/${params.domainId}/certificate`, {
    key: owner.key,
    body: { certificate: params.certificate, privateKey: params.privateKey },
  });
  if (uploaded.status !== 200) throw new Error(`could not upload a matrix certificate: ${JSON.stringify(uploaded.body)}`);
  return params;
};

export const APP_ROUTES: AuthenticatedRoute[] = [
  { method: "GET", path: "/api/apps/" },
  // A JSON body where multipart is expected: authentication is what is checked, nothing is deployed.
  { method: "POST", path: "/api/apps/deploy", body: { name: "matrix" } },
  { method: "POST", path: "/api/apps/inspect-env", body: { name: "matrix" } },
  // No repository: refused as invalid once authenticated, nothing is cloned.
  { method: "POST", path: "/api/apps/deploy-from-repo", body: { name: "matrix" } },
  // No image: refused as invalid once authenticated, nothing is pulled.
  { method: "POST", path: "/api/apps/deploy-image", body: { name: "matrix" } },
  { method: "GET", path: "/api/apps/:appId", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/stop", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/start", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/restart", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/logs", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/traffic", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/health", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/env", resource: appOf },
  { method: "PUT", path: "/api/apps/:appId/env", body: { envVars: {} }, resource: appOf },
  { method: "DELETE", path: "/api/apps/:appId/env/:name", resource: envVarOf, consumesResource: true },
  { method: "PUT", path: "/api/apps/:appId/settings", body: { autoRestart: true }, resource: appOf },
  { method: "GET", path: "/api/apps/:appId/builds", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/builds/:buildId", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/builds/:buildId/log", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/builds/:buildId/cancel", resource: unfinishedBuildOf },
  { method: "POST", path: "/api/apps/:appId/redeploy", resource: appOf },
  // The serving build: a fresh container of it, nothing used up.
  { method: "POST", path: "/api/apps/:appId/builds/:buildId/rollback", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/domains", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/domains", body: () => ({ domain: `${uniqueName("matrix")}.example.test` }), resource: appOf },
  { method: "GET", path: "/api/apps/:appId/domains/:domainId", resource: appDomainOf },
  { method: "POST", path: "/api/apps/:appId/domains/:domainId/verify", resource: appDomainOf },
  {
    method: "PUT",
    path: "/api/apps/:appId/domains/:domainId/certificate",
    body: ({ certificate, privateKey }: Record<string, string>) => ({ certificate, privateKey }),
    resource: appDomainAndCertificateOf,
  },
  { method: "DELETE", path: "/api/apps/:appId/domains/:domainId/certificate", resource: uploadedCertificateOf, consumesResource: true },
  { method: "DELETE", path: "/api/apps/:appId/domains/:domainId", resource: appDomainOf, consumesResource: true },
  { method: "GET", path: "/api/apps/:appId/deploy-hook", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/deploy-hook", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/webhook", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/webhook", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/fs/list", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/fs/history", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/history", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/fs/file", query: "path=index.html", resource: appOf },
  { method: "GET", path: "/api/apps/:appId/fs/archive", resource: appOf },
  { method: "POST", path: "/api/apps/:appId/fs/file", body: () => ({ path: `${uniqueName("matrix-new")}.txt` }), resource: appOf },
  { method: "PUT", path: "/api/apps/:appId/fs/file", body: { path: "index.html", content: "matrix" }, resource: appOf },
  { method: "POST", path: "/api/apps/:appId/fs/folder", body: () => ({ path: uniqueName("matrix-folder") }), resource: appOf },
  { method: "POST", path: "/api/apps/:appId/fs/move", body: (params: Record<string, string>) => ({ from: params.path, to: `${params.path}.moved` }), resource: appFileOf, consumesResource: true },
  { method: "POST", path: "/api/apps/:appId/fs/delete", body: (params: Record<string, string>) => ({ path: params.path }), resource: appFileOf, consumesResource: true },
  // Nothing matches: the plan is empty and nothing is renamed.
  { method: "POST", path: "/api/apps/:appId/fs/bulk-rename/preview", body: { find: "no-such-name" }, resource: appOf },
  { method: "POST", path: "/api/apps/:appId/fs/bulk-rename/apply", body: { find: "no-such-name" }, resource: appOf },
  // Last: it takes the shared app away, and the auth matrix leaves nothing behind only because of it.
  { method: "DELETE", path: "/api/apps/:appId", resource: appOf },
];
