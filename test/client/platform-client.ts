// What a user of the API writes with a client generated from the platform's document
// (scripts/generate-client.ts, then openapi-fetch): every path, body and answer below is typed
// by ./generated/platform-api.d.ts. The generated-client test writes that file from the running
// server, type-checks this one against it with tsc, then runs it; so a document that drifts
// from reality, or from what a client needs, breaks either the type check or the run.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./generated/platform-api";

export type App = components["schemas"]["App"];
/** JSON answers only: the routes that can also stream (logs with `follow`) are read as JSON here. */
export type PlatformClient = ReturnType<typeof createClient<paths, "application/json">>;

/** An error answer as the document types it: every one has a code from the one list. */
function failure(what: string, error: components["schemas"]["Error"]): Error {
  const code: components["schemas"]["ErrorCode"] = error.code;
  return new Error(`${what} failed: ${code}: ${error.error}`);
}

export function platformClient(baseUrl: string, key: string, ...middleware: Middleware[]): PlatformClient {
  const client = createClient<paths, "application/json">({ baseUrl, headers: { authorization: `Bearer ${key}` } });
  for (const each of middleware) client.use(each);
  return client;
}

export async function createKey(client: PlatformClient, name: string): Promise<{ id: string; key: string; workspaceId: string }> {
  const { data, error } = await client.POST("/api/api-keys/", { body: { name } });
  if (error) throw failure("createApiKey", error);
  return { id: data.apiKey.id, key: data.key, workspaceId: data.apiKey.workspaceId };
}

export async function deployZip(
  client: PlatformClient,
  fields: { name: string; runtime: Exclude<App["runtime"], "image">; memoryMB: number },
  zip: Blob,
): Promise<{ app: App; buildId: string }> {
  const { data, error } = await client.POST("/api/apps/deploy", {
    body: { ...fields, file: zip },
    bodySerializer(body) {
      const form = new FormData();
      for (const [name, value] of Object.entries(body)) form.set(name, value instanceof Blob ? value : String(value));
      return form;
    },
  });
  if (error) throw failure("deployApp", error);
  return { app: data.app, buildId: data.buildId };
}

export async function getApp(client: PlatformClient, appId: string): Promise<App> {
  const { data, error } = await client.GET("/api/apps/{appId}", { params: { path: { appId } } });
  if (error) throw failure("getApp", error);
  return data.app;
}

export async function appLogs(client: PlatformClient, appId: string, tail: number): Promise<string[]> {
  const { data, error } = await client.GET("/api/apps/{appId}/logs", { params: { path: { appId }, query: { tail } } });
  if (error) throw failure("getAppLogs", error);
  return data.lines;
}

export async function databaseNames(client: PlatformClient): Promise<string[]> {
  const { data, error } = await client.GET("/api/databases/");
  if (error) throw failure("listDatabases", error);
  return data.databases.map((database) => database.name);
}

export async function deleteApp(client: PlatformClient, appId: string): Promise<App["status"]> {
  const { data, error } = await client.DELETE("/api/apps/{appId}", { params: { path: { appId } } });
  if (error) throw failure("deleteApp", error);
  return data.app.status;
}
