// Request and answer schemas of /api/registries.
import { t } from "elysia";
import { resource, timestamp } from "../http/responses";

/** Longest registry host (with port) an image reference can name, and the bounds of a login. */
export const MAX_REGISTRY_LENGTH = 255;
export const MAX_USERNAME_LENGTH = 255;
export const MAX_PASSWORD_LENGTH = 4096;

export const RegistryCredentialSchema = resource(
  "RegistryCredential",
  {
    id: t.String(),
    registry: t.String({ description: "Registry host, with its port if any, as image references name it (`ghcr.io`, `registry.example.com:5000`)" }),
    username: t.String(),
    workspaceId: t.String(),
    createdAt: timestamp(),
  },
  "A workspace's login to an image registry, used for that workspace's image deploys from that host. The password or token is stored encrypted and never shown, not even masked.",
);

export const RegistryLoginCheckSchema = resource(
  "RegistryLoginCheck",
  {
    ok: t.Boolean({ description: "The registry accepted the login" }),
    message: t.String({ description: "What the registry (through the engine) answered, or why it was not asked" }),
  },
  "The outcome of a real login to the registry with the stored credentials.",
);

export const addRegistryBody = t.Object({
  registry: t.String({ minLength: 1, maxLength: MAX_REGISTRY_LENGTH, description: "Registry host, with its port if any: `ghcr.io`, `registry.example.com:5000`" }),
  username: t.String({ minLength: 1, maxLength: MAX_USERNAME_LENGTH }),
  password: t.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH, description: "Password or access token; stored encrypted, never returned" }),
});

export const registryIdParams = t.Object({ registryId: t.String({ minLength: 1, maxLength: 64 }) });

export const REGISTRY_RESOURCES = [RegistryCredentialSchema, RegistryLoginCheckSchema];
