import { describe, expect, test } from "bun:test";
import { toCreateOptions, type ContainerSpec } from "../../../src/docker/container-spec";

const base: ContainerSpec = {
  name: "platform-app-1",
  image: "node:22-bookworm-slim",
  command: ["node", "server.js"],
  labels: { "platform.managed": "true", "platform.workspace": "ws_1", "platform.app": "app_1" },
  memoryMB: 256,
};

describe("container create options", () => {
  test("every container is hardened", () => {
    const options = toCreateOptions(base);
    const host = options.HostConfig!;
    expect(host.Memory).toBe(256 * 1024 * 1024);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.PidsLimit).toBeGreaterThan(0);
    expect(host.SecurityOpt).toEqual(["no-new-privileges:true"]);
    expect(host.CapDrop).toEqual(["ALL"]);
    expect(host.CapAdd).toEqual([]);
    expect(host.Privileged).toBe(false);
    expect(host.LogConfig).toEqual({ Type: "json-file", Config: { "max-size": "10m", "max-file": "3" } });
    expect(host.Binds).toBeUndefined();
    expect(options.Cmd).toEqual(["node", "server.js"]);
  });

  test("named volumes, published port bound to one address, network alias", () => {
    const options = toCreateOptions({
      ...base,
      volumes: [{ volumeName: "platform-db-1", containerPath: "/var/lib/postgresql/data" }],
      publish: { containerPort: 5432, hostIp: "127.0.0.1" },
      network: { name: "platform-ws_1", aliases: ["db-orders"] },
      capabilities: ["CHOWN", "SETUID"],
    });
    expect(options.HostConfig!.Mounts).toEqual([{ Type: "volume", Source: "platform-db-1", Target: "/var/lib/postgresql/data" }]);
    expect(options.HostConfig!.PortBindings).toEqual({ "5432/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] });
    expect(options.NetworkingConfig!.EndpointsConfig!["platform-ws_1"]!.Aliases).toEqual(["db-orders"]);
    expect(options.HostConfig!.CapAdd).toEqual(["CHOWN", "SETUID"]);
  });

  test("refuses what would weaken the sandbox or smuggle text", () => {
    expect(() => toCreateOptions({ ...base, capabilities: ["SYS_ADMIN" as never] })).toThrow(/not allowed/);
    expect(() => toCreateOptions({ ...base, labels: {} })).toThrow(/platform.managed/);
    expect(() => toCreateOptions({ ...base, name: "../evil" })).toThrow(/invalid container name/);
    expect(() => toCreateOptions({ ...base, env: { "A=B": "x" } })).toThrow(/invalid environment variable/);
    expect(() => toCreateOptions({ ...base, sysctls: { "kernel.shmmax": "1" } })).toThrow(/sysctl kernel.shmmax is not allowed/);
    expect(() => toCreateOptions({ ...base, cpus: 0 })).toThrow(/invalid cpus/);
  });

  test("a CPU limit becomes NanoCpus; none is set when cpus is omitted", () => {
    expect(toCreateOptions({ ...base, cpus: 0.5 }).HostConfig!.NanoCpus).toBe(500_000_000);
    expect(toCreateOptions({ ...base, cpus: 2 }).HostConfig!.NanoCpus).toBe(2_000_000_000);
    expect(toCreateOptions(base).HostConfig!.NanoCpus).toBeUndefined();
  });

  test("user and the namespaced sysctl a non-root app needs for a low port", () => {
    const options = toCreateOptions({ ...base, user: "1000:1000", sysctls: { "net.ipv4.ip_unprivileged_port_start": "0" } });
    expect(options.User).toBe("1000:1000");
    expect(options.HostConfig!.Sysctls).toEqual({ "net.ipv4.ip_unprivileged_port_start": "0" });
  });
});
