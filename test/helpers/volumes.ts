// The auth matrix's volume routes. Their volume is a detached one of an app whose deploys fail at
// once (nothing in its ZIP is detected): attaching it back to that app restarts nothing that runs,
// so no container ever mounts it, no engine volume is made, and nothing is left behind. Also the
// teardown that deletes a workspace's volumes.
import type { TestServer } from "./server";
import type { AuthenticatedRoute, Tenant } from "./auth-matrix";
import { appZip, deployZip } from "./apps";

/** Deletes every volume the key's workspace still has (its apps deleted first), as a test's teardown. */
export async function deleteAllVolumes(server: TestServer, key: string) {
  const { volumes } = (await server.request("GET", "/api/volumes/", { key })).body;
  for (const volume of volumes ?? []) await server.request("DELETE", `/api/volumes/${volume.id}`, { key });
}

let matrixVolumeCount = 0;

const volumeOf = async (server: TestServer, owner: Tenant) => {
  const name = `matrix-volume-${++matrixVolumeCount}`;
  const volumes = JSON.stringify([{ name, mountPath: "/data" }]);
  const response = await deployZip(server, owner.key, { name, runtime: "node", memoryMB: "64", volumes }, appZip({ "README.txt": "nothing to run" }));
  if (response.status !== 202) throw new Error(`could not make a matrix volume: ${JSON.stringify(response.body)}`);
  const appId = response.body.app.id as string;
  const detached = await server.request("PUT", `/api/apps/${appId}/settings`, { key: owner.key, body: { volumes: [] } });
  if (detached.status !== 200) throw new Error(`could not detach a matrix volume: ${JSON.stringify(detached.body)}`);
  return { volumeId: response.body.app.volumes[0].id as string, appId };
};

export const VOLUME_ROUTES: AuthenticatedRoute[] = [
  { method: "GET", path: "/api/volumes/" },
  { method: "GET", path: "/api/volumes/:volumeId", resource: volumeOf },
  { method: "POST", path: "/api/volumes/:volumeId/attach", body: (params: Record<string, string>) => ({ appId: params.appId }), resource: volumeOf, consumesResource: true },
  { method: "DELETE", path: "/api/volumes/:volumeId", resource: volumeOf },
];
