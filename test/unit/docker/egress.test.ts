import { describe, expect, test } from "bun:test";
import {
  applyEgressFirewall,
  dockerHostPort,
  egressRules,
  FORWARD_CHAIN,
  INPUT_CHAIN,
  installEgressRules,
  isLocalEngine,
  type Iptables,
} from "../../../src/docker/egress";
import { workspaceBridgeName } from "../../../src/docker/workspace-network";
import { loadConfig } from "../../../src/config";

/** A stand-in iptables that records argv; chains listed in `existing` answer -S. */
function fakeIptables(existing: string[] = ["DOCKER-USER"]) {
  const calls: string[][] = [];
  const iptables: Iptables = async (args) => {
    calls.push(args);
    const exists = (args[0] === "-S" && existing.includes(args[1]!)) || (args[0] === "-N" && existing.push(args[1]!) > 0);
    return { exitCode: exists || !["-S", "-C"].includes(args[0]!) ? 0 : 1, stderr: "" };
  };
  return { calls, iptables };
}

describe("egress rules", () => {
  test("host ports get a TCP reset on INPUT; blocked addresses are refused on INPUT and when forwarded", () => {
    const rules = egressRules({ hostPorts: [3000, 2375, 3000], blockedCidrs: ["169.254.0.0/16"] });
    expect(rules.input).toEqual([
      ["-p", "tcp", "--dport", "2375", "-j", "REJECT", "--reject-with", "tcp-reset"],
      ["-p", "tcp", "--dport", "3000", "-j", "REJECT", "--reject-with", "tcp-reset"],
      ["-d", "169.254.0.0/16", "-j", "REJECT", "--reject-with", "icmp-host-prohibited"],
    ]);
    expect(rules.forward).toEqual([["-d", "169.254.0.0/16", "-j", "REJECT", "--reject-with", "icmp-host-prohibited"]]);
  });

  test("install replaces the chains' rules and hooks them from INPUT and DOCKER-USER for plw+ only", async () => {
    const { calls, iptables } = fakeIptables();
    await installEgressRules({ hostPorts: [3000], blockedCidrs: ["169.254.0.0/16"] }, iptables);
    const text = calls.map((args) => args.join(" "));
    expect(text).toContain(`-N ${INPUT_CHAIN}`);
    expect(text).toContain(`-F ${INPUT_CHAIN}`);
    expect(text).toContain(`-A ${FORWARD_CHAIN} -d 169.254.0.0/16 -j REJECT --reject-with icmp-host-prohibited`);
    expect(text).toContain(`-I INPUT 1 -i plw+ -j ${INPUT_CHAIN}`);
    expect(text).toContain(`-I DOCKER-USER 1 -i plw+ -j ${FORWARD_CHAIN}`);
  });

  test("without DOCKER-USER the forward chain hangs off FORWARD", async () => {
    const { calls, iptables } = fakeIptables([]);
    await installEgressRules({ hostPorts: [3000], blockedCidrs: [] }, iptables);
    expect(calls.map((args) => args.join(" "))).toContain(`-I FORWARD 1 -i plw+ -j ${FORWARD_CHAIN}`);
  });

  test("the start says why nothing is filtered: off, a remote engine, no iptables", async () => {
    const base = { firewall: true, blockedCidrs: ["169.254.0.0/16"], dockerHost: undefined, apiPort: 3000 };
    expect(await applyEgressFirewall({ ...base, firewall: false }, fakeIptables().iptables)).toMatch(/off/);
    expect(await applyEgressFirewall({ ...base, dockerHost: "tcp://10.0.0.5:2376" }, fakeIptables().iptables)).toMatch(/^WARNING.*another machine/);
    const missing: Iptables = async () => {
      throw new Error("Executable not found in $PATH: \"iptables\"");
    };
    expect(await applyEgressFirewall(base, missing)).toMatch(/^WARNING: egress firewall not installed \(Executable not found/);
    const { calls, iptables } = fakeIptables();
    expect(await applyEgressFirewall({ ...base, dockerHost: "tcp://127.0.0.1:12375" }, iptables)).toMatch(/installed.*3000, 2375, 2376, 12375/);
    expect(calls.map((args) => args.join(" "))).toContain(`-A ${INPUT_CHAIN} -p tcp --dport 12375 -j REJECT --reject-with tcp-reset`);
  });

  test("engine address helpers", () => {
    expect(isLocalEngine(undefined)).toBe(true);
    expect(isLocalEngine("unix:///var/run/docker.sock")).toBe(true);
    expect(isLocalEngine("tcp://localhost:2375")).toBe(true);
    expect(isLocalEngine("tcp://192.168.1.4:2375")).toBe(false);
    expect(dockerHostPort("tcp://127.0.0.1:2377")).toBe(2377);
    expect(dockerHostPort("unix:///var/run/docker.sock")).toBeUndefined();
  });

  test("workspace bridges fit Linux's 15 characters and carry the prefix the rules match", () => {
    const name = workspaceBridgeName("ws_0123456789abcdefghij");
    expect(name).toMatch(/^plw-[0-9a-f]{11}$/);
    expect(workspaceBridgeName("ws_other")).not.toBe(name);
  });

  test("settings: firewall on by default with the link-local range blocked; bad values refused", () => {
    expect(loadConfig({}).egress).toEqual({ firewall: true, blockedCidrs: ["169.254.0.0/16"] });
    expect(loadConfig({ PLATFORM_EGRESS_BLOCKED: "169.254.169.254, 10.1.0.0/16" }).egress.blockedCidrs).toEqual(["169.254.169.254", "10.1.0.0/16"]);
    expect(() => loadConfig({ PLATFORM_EGRESS_BLOCKED: "metadata; rm -rf /" })).toThrow(/PLATFORM_EGRESS_BLOCKED/);
    expect(() => loadConfig({ PLATFORM_EGRESS_FIREWALL: "yes" })).toThrow(/PLATFORM_EGRESS_FIREWALL/);
    expect(loadConfig({}).appUser).toBe("1000:1000");
    expect(loadConfig({ PLATFORM_APP_USER: "root" }).appUser).toBeUndefined();
    expect(loadConfig({ PLATFORM_APP_USER: "" }).appUser).toBeUndefined();
    expect(() => loadConfig({ PLATFORM_APP_USER: "1000; id" })).toThrow(/PLATFORM_APP_USER/);
  });
});
