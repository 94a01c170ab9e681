// Egress rules on workspace bridges, proven without sending a packet anywhere but this machine:
// a stand-in "forbidden destination" lives in a network namespace this test makes (10.203.x.2),
// and is blocked through PLATFORM_EGRESS_BLOCKED exactly as the metadata address is by default.
// An app probes TCP from inside its container: before the firewall it reaches the stand-in and
// the platform's API on the bridge gateway; after a restart with the firewall on it reaches
// neither, and still reaches another app of its workspace. The rules are also read back.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { freePort } from "../../helpers/ports";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { FORWARD_CHAIN, INPUT_CHAIN, removeEgressRules } from "../../../src/docker/egress";
import { workspaceBridgeName, workspaceNetworkName } from "../../../src/docker/workspace-network";

// Per file: this Bun reads no timeout from bunfig.toml, and a preload's setting holds for its first file only.
setDefaultTimeout(120_000);

const suffix = Math.floor(Math.random() * 1e6).toString(36);
const NAMESPACE = `plt-egress-${suffix}`;
const HOST_VETH = `vh${suffix}`;
const NS_VETH = `vn${suffix}`;
const octet = 1 + Math.floor(Math.random() * 250);
const HOST_SIDE = `10.203.${octet}.1`;
const STAND_IN = `10.203.${octet}.2`;
const STAND_IN_PORT = 8080;

const PROBE_APP = `
const http = require("http"), net = require("net");
http.createServer((req, res) => {
  const url = new URL(req.url, "http://app");
  if (url.pathname !== "/probe") return res.end("peer here");
  const socket = net.connect({ host: url.searchParams.get("host"), port: Number(url.searchParams.get("port")) });
  const done = (result) => { socket.destroy(); if (!res.writableEnded) res.end(result); };
  socket.setTimeout(4000, () => done("timeout"));
  socket.on("connect", () => done("open"));
  socket.on("error", (error) => done(error.code));
}).listen(Number(process.env.PORT));
`;

function run(...argv: string[]) {
  const result = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${result.stderr.toString()}`);
  return result.stdout.toString();
}

let server: TestServer;
let key: string;
let workspaceId: string;
let standIn: ReturnType<typeof Bun.spawn> | null = null;
const apiPort = freePort("0.0.0.0");
const env = { PLATFORM_HOST: "0.0.0.0", PLATFORM_PORT: String(apiPort) };
let prober: any;
let gateway: string;

const probe = async (host: string, port: number) => (await viaProxy(server, prober.subdomain, `/probe?host=${host}&port=${port}`)).text();

beforeAll(async () => {
  await removeEgressRules(); // a clean "before": nothing left by an earlier run
  run("ip", "netns", "add", NAMESPACE);
  run("ip", "link", "add", HOST_VETH, "type", "veth", "peer", "name", NS_VETH);
  run("ip", "link", "set", NS_VETH, "netns", NAMESPACE);
  run("ip", "addr", "add", `${HOST_SIDE}/30`, "dev", HOST_VETH);
  run("ip", "link", "set", HOST_VETH, "up");
  run("ip", "netns", "exec", NAMESPACE, "ip", "addr", "add", `${STAND_IN}/30`, "dev", NS_VETH);
  run("ip", "netns", "exec", NAMESPACE, "ip", "link", "set", NS_VETH, "up");
  run("ip", "netns", "exec", NAMESPACE, "ip", "route", "add", "default", "via", HOST_SIDE);
  standIn = Bun.spawn(
    ["ip", "netns", "exec", NAMESPACE, process.execPath, "-e", `Bun.serve({ hostname: "${STAND_IN}", port: ${STAND_IN_PORT}, fetch: () => new Response("stand-in") })`],
    { stdout: "ignore", stderr: "ignore" },
  );
  for (let attempt = 0; attempt < 50; attempt++) {
    if (await fetch(`http://${STAND_IN}:${STAND_IN_PORT}/`).then((response) => response.ok, () => false)) break;
    await Bun.sleep(100);
  }

  server = await TestServer.start({ ...env, PLATFORM_EGRESS_FIREWALL: "off" });
  const created = await server.createKey("egress", "egress");
  key = created.key;
  workspaceId = created.workspaceId;
  const files = appZip({ "package.json": JSON.stringify({ name: "probe", scripts: { start: "node server.js" } }), "server.js": PROBE_APP });
  const deployed = await Promise.all(["prober", "peer"].map((name) => deployZip(server, key, { name, runtime: "node", memoryMB: "128" }, files)));
  const apps = await Promise.all(deployed.map((response) => waitForStatus(server, key, response.body.app.id, ["running", "failed"])));
  expect(apps.map((app) => app.status)).toEqual(["running", "running"]);
  prober = apps[0];
  const inspected = JSON.parse(run("docker", "network", "inspect", workspaceNetworkName(workspaceId)))[0];
  gateway = inspected.IPAM.Config[0].Gateway;
});

afterAll(async () => {
  if (server) {
    await deleteAllApps(server, key);
    await server.stop();
  }
  await removeEgressRules();
  standIn?.kill();
  await standIn?.exited;
  Bun.spawnSync(["ip", "netns", "del", NAMESPACE]);
  Bun.spawnSync(["ip", "link", "del", HOST_VETH], { stderr: "ignore" });
});

describe("egress rules for containers on workspace networks", () => {
  test("the workspace network's bridge is a plw- interface", () => {
    const inspected = JSON.parse(run("docker", "network", "inspect", workspaceNetworkName(workspaceId)))[0];
    expect(inspected.Options["com.docker.network.bridge.name"]).toBe(workspaceBridgeName(workspaceId));
    expect(run("ip", "-o", "link", "show", workspaceBridgeName(workspaceId))).toContain(workspaceBridgeName(workspaceId));
  });

  test("without the firewall a container reaches the stand-in and the API port on the gateway", async () => {
    expect(await probe(STAND_IN, STAND_IN_PORT)).toBe("open");
    expect(await probe(gateway, apiPort)).toBe("open");
    expect(await probe("peer", 3000)).toBe("open");
  });

  test("after a restart with the firewall on: blocked destinations and the API are refused, the workspace is not", async () => {
    await server.stop();
    server = new TestServer(server.dataDir, { ...env, PLATFORM_EGRESS_FIREWALL: "on", PLATFORM_EGRESS_BLOCKED: `169.254.0.0/16,${STAND_IN}/32` });
    await server.boot();
    for (let attempt = 0; attempt < 100 && !server.output.includes("[egress]"); attempt++) await Bun.sleep(100);
    expect(server.output).toContain(`[egress] egress firewall installed: containers on plw+ bridges are refused TCP ports`);

    expect(await probe(STAND_IN, STAND_IN_PORT)).toBe("EHOSTUNREACH");
    expect(await probe(gateway, apiPort)).toBe("ECONNREFUSED");
    expect(await probe(gateway, 2375)).toBe("ECONNREFUSED");
    expect(await probe("peer", 3000)).toBe("open");
    // Build containers run user code (install and build scripts) on the same bridge.
    const buildProbe = `require("net").connect(${STAND_IN_PORT}, "${STAND_IN}").on("connect", () => { console.log("build-probe:open"); process.exit(0); })` +
      `.on("error", (error) => { console.log("build-probe:" + error.code); process.exit(0); })`;
    const files = appZip({
      "package.json": JSON.stringify({ name: "build-probe", scripts: { build: `node -e '${buildProbe}'`, start: "node server.js" } }),
      "server.js": PROBE_APP,
    });
    const built = await deployZip(server, key, { name: "build-probe", runtime: "node", memoryMB: "128" }, files);
    await waitForStatus(server, key, built.body.app.id, ["running", "failed"]);
    const build = await server.request("GET", `/api/apps/${built.body.app.id}/builds/${built.body.buildId}`, { key });
    expect(build.body.log).toContain("build-probe:EHOSTUNREACH");
    // The host itself is not filtered: only traffic coming in from workspace bridges is.
    expect(await (await fetch(`http://${STAND_IN}:${STAND_IN_PORT}/`)).text()).toBe("stand-in");
  });

  test("the rules read back with iptables -S", () => {
    const forward = run("iptables", "-S", FORWARD_CHAIN);
    expect(forward).toContain(`-A ${FORWARD_CHAIN} -d 169.254.0.0/16 -j REJECT --reject-with icmp-host-prohibited`);
    expect(forward).toContain(`-A ${FORWARD_CHAIN} -d ${STAND_IN}/32 -j REJECT --reject-with icmp-host-prohibited`);
    const input = run("iptables", "-S", INPUT_CHAIN);
    expect(input).toContain(`-A ${INPUT_CHAIN} -p tcp -m tcp --dport ${apiPort} -j REJECT --reject-with tcp-reset`);
    expect(input).toContain(`-A ${INPUT_CHAIN} -p tcp -m tcp --dport 2375 -j REJECT --reject-with tcp-reset`);
    expect(run("iptables", "-S", "DOCKER-USER")).toContain(`-A DOCKER-USER -i plw+ -j ${FORWARD_CHAIN}`);
    expect(run("iptables", "-S", "INPUT")).toContain(`-A INPUT -i plw+ -j ${INPUT_CHAIN}`);
  });
});
