// Routes of /api/registries: a workspace's registry credentials (./service.ts).
import { Elysia, t } from "elysia";
import type { ServerContext } from "../http/context";
import { authPlugin } from "../http/auth";
import { ok } from "../http/envelope";
import { json, ref, responses, LIST_META } from "../http/responses";
import { addRegistryBody, registryIdParams, RegistryCredentialSchema, RegistryLoginCheckSchema } from "./model";
import { credentialView, Registries } from "./service";
import { LOCAL_MACHINE_ID } from "../machines/service";

export function registriesRoutes(ctx: ServerContext) {
  const registries = new Registries({ db: ctx.db, secrets: ctx.secrets, registries: ctx.config.buildRegistries });
  return new Elysia({ prefix: "/api/registries", tags: ["Registries"] })
    .use(authPlugin(ctx))
    .get(
      "/",
      ({ principal }) => {
        const list = registries.list(principal.workspaceId).map(credentialView);
        return ok({ registries: list, meta: { total: list.length } });
      },
      {
        auth: true,
        detail: {
          operationId: "listRegistries",
          responses: responses({ 200: json("The workspace's registry credentials, oldest first", { registries: t.Array(ref(RegistryCredentialSchema)), meta: ref(LIST_META) }) }),
          summary: "List registry credentials",
          description: "Host and user name of each; the password or token is never shown, not even masked.",
        },
      },
    )
    .post(
      "/",
      ({ principal, body, set }) => {
        set.status = 201;
        return ok({ registry: credentialView(registries.add(principal.workspaceId, body)) });
      },
      {
        auth: true,
        body: addRegistryBody,
        detail: {
          operationId: "addRegistry",
          responses: responses({ 201: json("Stored", { registry: ref(RegistryCredentialSchema) }) }, "VALIDATION_FAILED", "IMAGE_NOT_ALLOWED", "REGISTRY_TAKEN"),
          summary: "Add registry credentials",
          description:
            "`registry` (host, optional port), `username`, `password` (or an access token). The password is stored encrypted " +
            "and sent only with this workspace's pulls from that host (POST /api/apps/deploy-image); it is never returned. " +
            "400 `IMAGE_NOT_ALLOWED` for a registry image deploys may not pull from (only the public registries and those in " +
            "PLATFORM_BUILD_REGISTRIES); 409 `REGISTRY_TAKEN` when the workspace has credentials for that host already.",
        },
      },
    )
    .post(
      "/:registryId/test",
      async ({ principal, params }) => ok({ login: await registries.test(principal.workspaceId, params.registryId, ctx.machines.get(LOCAL_MACHINE_ID)) }),
      {
        auth: true,
        params: registryIdParams,
        detail: {
          operationId: "testRegistry",
          responses: responses({ 200: json("The login's outcome", { login: ref(RegistryLoginCheckSchema) }) }, "NOT_FOUND", "DOCKER_UNAVAILABLE", "DOCKER_TIMEOUT"),
          summary: "Check registry credentials",
          description:
            "The engine logs in to the registry with the stored credentials, as a pull would (bounded by its call timeout: " +
            "504 `DOCKER_TIMEOUT` past it). `login.ok` tells whether the registry accepted them; `login.message` is its answer, " +
            "cut short, without the password.",
        },
      },
    )
    .delete(
      "/:registryId",
      ({ principal, params }) => ok({ registry: credentialView(registries.delete(principal.workspaceId, params.registryId)) }),
      {
        auth: true,
        params: registryIdParams,
        detail: {
          operationId: "deleteRegistry",
          responses: responses({ 200: json("Deleted: the credentials as they were", { registry: ref(RegistryCredentialSchema) }) }, "NOT_FOUND"),
          summary: "Delete registry credentials",
          description: "Later pulls from that host go without credentials. Images already pulled stay.",
        },
      },
    );
}
