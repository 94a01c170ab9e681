// Egress rules for the containers on workspace bridges (host interfaces `plw-…`, see
// ./workspace-network.ts): they must not reach the platform's API port or Docker's TCP ports on
// the host itself, nor the blocked addresses (the cloud metadata address 169.254.169.254 and the
// rest of the link-local range by default) anywhere. Two iptables chains of the platform's own:
//   INPUT       -i plw+ -> PLATFORM-EGRESS-IN   (packets to the host's own addresses)
//   DOCKER-USER -i plw+ -> PLATFORM-EGRESS-FWD  (packets routed on, to other hosts)
// Installed at every start, replacing what an earlier start left (so a changed setting applies),
// and left in place at shutdown: the containers keep running while the platform is down.
// iptables is a host command run by argv, never through a shell.

export const INPUT_CHAIN = "PLATFORM-EGRESS-IN";
export const FORWARD_CHAIN = "PLATFORM-EGRESS-FWD";
/** iptables' wildcard for every workspace bridge. */
export const WORKSPACE_INTERFACES = "plw+";
/** Docker's conventional TCP ports (plain and TLS). */
export const DOCKER_TCP_PORTS = [2375, 2376];

export interface EgressPolicy {
  /** TCP ports of the host itself no container may open: the API, Docker's. */
  hostPorts: number[];
  /** IPv4 addresses or CIDRs no container may reach, on the host or beyond it. */
  blockedCidrs: string[];
}

export interface IptablesResult {
  exitCode: number;
  stderr: string;
}
export type Iptables = (args: string[]) => Promise<IptablesResult>;

/** The rules of each chain, as iptables argv after `-A <chain>`. */
export function egressRules(policy: EgressPolicy): { input: string[][]; forward: string[][] } {
  const ports = [...new Set(policy.hostPorts)].sort((a, b) => a - b);
  const toBlocked = policy.blockedCidrs.map((cidr) => ["-d", cidr, "-j", "REJECT", "--reject-with", "icmp-host-prohibited"]);
  return {
    input: [...ports.map((port) => ["-p", "tcp", "--dport", String(port), "-j", "REJECT", "--reject-with", "tcp-reset"]), ...toBlocked],
    forward: toBlocked,
  };
}

/** The engine's TCP port when PLATFORM_DOCKER_HOST is tcp://host:port. */
export function dockerHostPort(dockerHost: string | undefined): number | undefined {
  const match = dockerHost ? /^tcp:\/\/[^/]*:(\d+)\/?$/.exec(dockerHost) : null;
  return match ? Number(match[1]) : undefined;
}

/** Rules on this machine only govern containers of an engine on this machine (socket, or TCP on loopback). */
export function isLocalEngine(dockerHost: string | undefined): boolean {
  if (!dockerHost || dockerHost.startsWith("unix://") || dockerHost.startsWith("npipe://")) return true;
  const host = /^tcp:\/\/(\[[^\]]+\]|[^:/]+)/.exec(dockerHost)?.[1];
  return host === "localhost" || host === "[::1]" || (host?.startsWith("127.") ?? false);
}

export const runIptables: Iptables = async (args) => {
  // -w: wait for the xtables lock, which dockerd takes too.
  const child = Bun.spawn(["iptables", "-w", "5", ...args], { stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { exitCode, stderr: stderr.trim() };
};

async function must(iptables: Iptables, args: string[]) {
  const result = await iptables(args);
  if (result.exitCode !== 0) throw new Error(`iptables ${args.join(" ")}: ${result.stderr || `exit code ${result.exitCode}`}`);
}

/** Adds the jump at the top of `from` unless it is there. */
async function ensureJump(iptables: Iptables, from: string, chain: string) {
  const jump = ["-i", WORKSPACE_INTERFACES, "-j", chain];
  if ((await iptables(["-C", from, ...jump])).exitCode !== 0) await must(iptables, ["-I", from, "1", ...jump]);
}

/** Replaces the platform's chains with the rules of `policy` and hooks them in; idempotent. */
export async function installEgressRules(policy: EgressPolicy, iptables: Iptables = runIptables): Promise<void> {
  const rules = egressRules(policy);
  // Docker makes DOCKER-USER and sends forwarded traffic through it first; without it, FORWARD.
  const forwardHook = (await iptables(["-S", "DOCKER-USER"])).exitCode === 0 ? "DOCKER-USER" : "FORWARD";
  for (const [chain, chainRules] of [[INPUT_CHAIN, rules.input], [FORWARD_CHAIN, rules.forward]] as const) {
    if ((await iptables(["-S", chain])).exitCode !== 0) await must(iptables, ["-N", chain]);
    await must(iptables, ["-F", chain]);
    for (const rule of chainRules) await must(iptables, ["-A", chain, ...rule]);
  }
  await ensureJump(iptables, "INPUT", INPUT_CHAIN);
  await ensureJump(iptables, forwardHook, FORWARD_CHAIN);
}

/** Unhooks and deletes the platform's chains (what an operator or a test runs to undo installEgressRules). */
export async function removeEgressRules(iptables: Iptables = runIptables): Promise<void> {
  for (const [from, chain] of [["INPUT", INPUT_CHAIN], ["DOCKER-USER", FORWARD_CHAIN], ["FORWARD", FORWARD_CHAIN]] as const) {
    while ((await iptables(["-D", from, "-i", WORKSPACE_INTERFACES, "-j", chain])).exitCode === 0);
  }
  for (const chain of [INPUT_CHAIN, FORWARD_CHAIN]) {
    await iptables(["-F", chain]);
    await iptables(["-X", chain]);
  }
}

export interface EgressSettings {
  firewall: boolean;
  blockedCidrs: string[];
  dockerHost: string | undefined;
  apiPort: number;
}

/**
 * What `platform serve` does at start: installs the rules, or says plainly why containers are not
 * filtered (turned off, a remote engine, no iptables or no permission). Never stops the platform.
 */
export async function applyEgressFirewall(settings: EgressSettings, iptables: Iptables = runIptables): Promise<string> {
  if (!settings.firewall) return "egress firewall off (PLATFORM_EGRESS_FIREWALL=off): containers are not filtered";
  if (!isLocalEngine(settings.dockerHost)) {
    return `WARNING: egress firewall not installed: the Docker engine (${settings.dockerHost}) is on another machine; filter its workspace bridges (plw+) there`;
  }
  const engineTcpPort = dockerHostPort(settings.dockerHost);
  const policy = {
    hostPorts: [settings.apiPort, ...DOCKER_TCP_PORTS, ...(engineTcpPort ? [engineTcpPort] : [])],
    blockedCidrs: settings.blockedCidrs,
  };
  try {
    await installEgressRules(policy, iptables);
  } catch (error) {
    return `WARNING: egress firewall not installed (${(error as Error).message}); containers can reach the API port, Docker's TCP ports and ${settings.blockedCidrs.join(", ")}`;
  }
  return `egress firewall installed: containers on plw+ bridges are refused TCP ports ${policy.hostPorts.join(", ")} of this host and ${policy.blockedCidrs.join(", ") || "no other address"} (iptables -S ${INPUT_CHAIN}; iptables -S ${FORWARD_CHAIN})`;
}
