// Public proxy throughput benchmark, on the compiled binary and the real local Docker engine with
// the stand-in images (the same ones test/setup.ts selects). One bun app answering 1 KiB is
// deployed through the API; then wrk (-t2, --latency) at 64 and 256 connections measures:
//   direct  wrk -> the app's container (its address on the workspace network)
//   nginx   wrk -> nginx (1 worker, upstream keepalive pool) on a loopback port -> the container,
//           forwarding the headers ours does (X-Forwarded-*, X-Real-IP, X-Request-Id both ways):
//           the reference, doing the same job
//   nginx-minimal  the same nginx with only X-Forwarded-For, -Host and -Proto, for information
//   bare-bun  wrk -> scripts/bench/bare-relay.ts -> the container: the least a proxy in JavaScript
//           on Bun's sockets can do (no parsing, no headers, no limits), i.e. the ceiling for ours
//   ours    wrk -> the platform's public proxy with `Host: <subdomain>.bench.localhost` -> the container
// and prints req/s, p99, ours/nginx, and the platform process's VmRSS before and after its runs.
// Each proxy's CPU time per request (user + system, from /proc/<pid>/stat: the nginx worker, the
// bare relay, the platform) is printed too: with wrk, the app and the proxy sharing the cores,
// req/s also shows who got the CPU, while CPU per request is the proxy's own cost. Its user part
// follows in parentheses: the proxy's own code, where the system part is mostly the network stack.
// The targets take turns: 4 rounds of 3 s each, every other round in reverse order, so that a
// machine that speeds up or slows down during the run (a shared VM drifts by 10% in minutes) weighs
// on all of them alike. A row gives the mean req/s of its rounds, the median p50 and p99, and the
// CPU over all of them; the verdict lines also list ours/nginx round by round.
// At 256 connections on 2 cores, req/s depends less on CPU per request than on who gets the
// proxy's core. A proxy that is never idle (nginx) keeps it to itself; one that empties its ready
// list and waits for a moment (ours, bare-bun: less CPU per request) lets the kernel wake a wrk
// thread on that idle core, and from then on wrk and the proxy take turns there request by request.
// perf sched timehist over 0.5 s of a lab run at 256: nginx had its core 100% in 81 slices; our
// proxy thread 93%, while wrk got 5% of that core in 2,100 slices of about 12 µs. Hence bare-bun,
// the cheapest per request, only ties nginx at 256. Tried on 2026-11-27: with every proxy at nice -5
// (ours' thread through setPriority, nginx through worker_priority) a proxy takes its core back from
// wrk at once, and ours gave 1.08x-1.10x nginx at 256 (1.00x at nice 0 in the same session). The
// platform does not do it: nice ranks threads only within one scheduling group, and the apps run in
// containers, cgroups of their own, so -5 would put the proxy ahead of wrk and of the platform's
// own API, never ahead of the apps (with two spinning containers it changed nothing measurable).
// Targets: ours >= 1.0x nginx req/s at both counts, p99 no worse than nginx, RSS growth < 30 MB.
//
// Then nginx and ours again at the first connection count while the platform's API answers
// GET /api/apps 200 times a second, for information: the proxy runs on a thread of its own
// (src/proxy/thread.ts), so the API's work costs it a share of the cores, as it costs nginx, but
// never holds up its requests.
//
// Then HTTPS, nginx against ours only, at the same counts, keep-alive and new connections (wrk
// sends `Connection: close`, so every request pays a TCP connect and a TLS handshake). Both serve
// one self-signed ECDSA P-256 certificate for `*.bench.localhost`, made with openssl; wrk asks for
// `https://<subdomain>.bench.localhost:<port>/`, so the SNI name and Host are the app's. nginx
// keeps its TLS defaults (no ssl_session_cache, session tickets on) except ssl_protocols, which
// gets 1.23.4's default TLSv1.2 TLSv1.3 (Debian's 1.22 would stop at TLSv1.2). wrk keeps a
// connection's TLS session across its reconnects, so "new connections" measures resumed
// handshakes wherever the server resumes TLS 1.3 sessions: the bench prints which do (openssl
// s_client). Informational: no target yet. Our p99 for new connections is far above nginx's, and
// a bare Bun.serve or Bun.listen TLS server shows the same: Bun's socket layer (uSockets) parks a
// socket whose handshake is not done, and takes only 5 of them (the newest first) in each turn of
// its loop (MAX_LOW_PRIO_SOCKETS_PER_LOOP_ITERATION), so that a storm of handshakes cannot starve
// the connections already open. A handshake that waits behind many newer ones shows in the p99.
//
//   bun scripts/bench/proxy.ts [--rebuild]
//
// wrk and nginx-light are installed with apt-get when missing (reused when present).
//
// The proxy's rate and connection limits (PLATFORM_PROXY_*) and the API's are set out of reach for the run. BENCH_BINARY=path
// benchmarks another build of the platform instead of ./platform (not rebuilt).
// Settings: BENCH_ROUNDS (default 4), BENCH_DURATION (wrk -d of one round, default 3s),
// BENCH_HTTPS_DURATION (wrk -d of one HTTPS round, default 2s), BENCH_CONNECTIONS (default
// 64,256), BENCH_NGINX_KEEPALIVE (nginx upstream keepalive pool, default 256),
// BENCH_API_LOAD_PER_SECOND (the busy-API rounds' GET /api/apps a second, default 200).
// Traffic goes only to 127.0.0.1 and the bench's own container; the app is deleted through the
// API, nginx and the bare relay stopped, the server stopped and temp dirs removed at the end.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { strToU8, zipSync } from "fflate";
import { useStandInImages } from "../../test/helpers/stand-ins";
import { removeTempDirs, tempDir } from "../../test/helpers/temp";
import type { TestServer } from "../../test/helpers/server";
import { ensureBinary, median, residentMegabytes, startBinary, printServerTail, runBenchmark } from "./binary";
import { resumesTls13Sessions, wildcardCertificate, type CertificateFiles } from "./tls-cert";

useStandInImages();

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const DURATION = process.env.BENCH_DURATION ?? "3s";
const HTTPS_DURATION = process.env.BENCH_HTTPS_DURATION ?? "2s";
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? "64,256").split(",").map(Number);
const NGINX_KEEPALIVE = Number(process.env.BENCH_NGINX_KEEPALIVE ?? 256);
const RSS_TARGET_MB = 30;
/** GET /api/apps a second during the busy-API rounds (BENCH_API_LOAD_PER_SECOND). */
const API_LOAD_PER_SECOND = Number(process.env.BENCH_API_LOAD_PER_SECOND ?? 200);
const DEPLOY_TIMEOUT_MS = 180_000;
/** The platform's domain: app hosts are `<subdomain>.bench.localhost`, covered by the bench's certificate. */
const BENCH_DOMAIN = "bench.localhost";

interface WrkResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: string;
  /** CPU time wrk itself used (user + system), in µs. */
  wrkCpuMicros: number;
}

function ensureTools() {
  if (!Bun.which("openssl")) throw new Error("openssl is missing: it makes the bench's certificate (apt-get install openssl)");
  const missing = ["wrk", "nginx"].filter((tool) => !Bun.which(tool, { PATH: `${process.env.PATH}:/usr/sbin:/sbin` }));
  if (!missing.length) return;
  console.log(`installing wrk and nginx-light with apt-get (missing: ${missing.join(", ")})...`);
  const install = Bun.spawnSync(["apt-get", "install", "-y", "wrk", "nginx-light"], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    stdout: "ignore",
    stderr: "pipe",
  });
  if (install.exitCode !== 0) throw new Error(`apt-get install -y wrk nginx-light failed:\n${install.stderr.toString()}`);
}

const nginxBinary = () => Bun.which("nginx", { PATH: `${process.env.PATH}:/usr/sbin:/sbin` })!;

/** A bun app answering 1 KiB to every request. */
function bunApp(): Uint8Array<ArrayBuffer> {
  return zipSync({
    "package.json": strToU8(JSON.stringify({ name: "bench-proxy", scripts: { start: "bun index.ts" } })),
    "index.ts": strToU8(
      'const body = "x".repeat(1024);\n' +
        'Bun.serve({ port: Number(process.env.PORT), fetch: () => new Response(body, { headers: { "content-type": "text/plain" } }) });\n',
    ),
  }) as Uint8Array<ArrayBuffer>;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolvePort(port));
    });
  });
}

/**
 * A wrk script that connects to 127.0.0.1 whatever the URL's host: names under `localhost` do not
 * resolve on every machine (not without nss-myhostname), and /etc/hosts is not the bench's to edit.
 * The URL's host still gives the SNI name and the Host header.
 */
function loopbackWrkScript(dir: string): string {
  const file = join(dir, "loopback.lua");
  writeFileSync(file, 'function wrk.resolve(host, service)\n  wrk.addrs = wrk.lookup("127.0.0.1", service)\nend\n');
  return file;
}

/** Waits for 200 with 1 KiB; `tls` is for an https URL: the SNI name and the certificate to trust. */
async function waitForHttp(url: string, headers: Record<string, string> = {}, tls?: { serverName: string; ca: string }, timeoutMs = 20_000) {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    const response = await fetch(url, { headers, tls }).catch(() => null);
    if (response) {
      const text = await response.text();
      if (response.status === 200 && text.length === 1024) return;
    }
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not answer 200 with 1 KiB within ${timeoutMs / 1000} s`);
}

function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!match) return NaN;
  const number = Number(match[1]);
  return match[2] === "us" ? number / 1000 : match[2] === "ms" ? number : match[2] === "s" ? number * 1000 : number * 60_000;
}

interface WrkOptions {
  host?: string;
  /** `Connection: close` on every request: a new connection (and TLS handshake) each. */
  newConnections?: boolean;
  script?: string;
}

async function wrk(url: string, connections: number, duration: string, options: WrkOptions = {}): Promise<WrkResult> {
  const args = ["wrk", "-t2", `-c${connections}`, `-d${duration}`, "--latency"];
  if (options.host) args.push("-H", `Host: ${options.host}`);
  if (options.newConnections) args.push("-H", "Connection: close");
  if (options.script) args.push("-s", options.script);
  args.push(url);
  const child = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")} failed (${code}):\n${out}${err}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const p50 = toMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? "");
  const p99 = toMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? "");
  const errors = [/Socket errors:.*$/m.exec(out)?.[0], /Non-2xx or 3xx responses:.*$/m.exec(out)?.[0]].filter(Boolean).join("; ");
  const wrkCpuMicros = Number(child.resourceUsage()?.cpuTime.total ?? NaN);
  return { requests, requestsPerSecond: rps, p50Ms: p50, p99Ms: p99, errors, wrkCpuMicros };
}

/**
 * nginx as the reference: it forwards what ours does, so both give the app and the client the same
 * headers (src/proxy/forwarding.ts): X-Forwarded-For, -Host, -Proto, -Port, X-Real-IP, and an
 * X-Request-Id (the client's, else a new one) sent to the app and returned to the client. A second
 * HTTP server, `minimalPort`, forwards only the three X-Forwarded headers of nginx's usual recipe:
 * an informational row, as the bench measured before 2026-11-24.
 */
function nginxConfig(dir: string, port: number, minimalPort: number, tlsPort: number, upstream: string, certificate: CertificateFiles): string {
  const proxied = `proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";`;
  const location = `location / {
      ${proxied}
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Port $server_port;
      proxy_set_header X-Request-Id $forwarded_request_id;
      add_header X-Request-Id $forwarded_request_id always;
    }`;
  const minimalLocation = `location / {
      ${proxied}
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Proto $scheme;
    }`;
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream app {
    server ${upstream};
    keepalive ${NGINX_KEEPALIVE};
  }
  map $http_x_request_id $forwarded_request_id {
    default $http_x_request_id;
    "" $request_id;
  }
  server {
    listen 127.0.0.1:${port} reuseport backlog=4096;
    ${location}
  }
  server {
    listen 127.0.0.1:${minimalPort} reuseport backlog=4096;
    ${minimalLocation}
  }
  server {
    listen 127.0.0.1:${tlsPort} ssl reuseport backlog=4096;
    ssl_certificate ${certificate.certFile};
    ssl_certificate_key ${certificate.keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;
    ${location}
  }
}
`;
}

/** nginx's one worker: the master's child, which serves the connections (found by the parent pid in /proc/<pid>/stat). */
function nginxWorkerPid(masterPid: number): number {
  const children = readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === masterPid;
      } catch {
        return false; // a process that ended meanwhile
      }
    })
    .map(Number);
  if (children.length !== 1) throw new Error(`nginx (pid ${masterPid}) should have one worker, has: ${children.join(", ") || "none"}`);
  return children[0]!;
}

const fmt = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");

interface Target extends WrkOptions {
  name: string;
  url: string;
  /** The process doing the proxying, whose CPU time is read around each run. */
  pid?: number;
}

interface Measurement extends WrkResult {
  /** The proxy's CPU time (user + system) per request, in µs; NaN for a target without a process. */
  cpuMicrosPerRequest: number;
  /** The app's (its container's) and wrk's CPU time per request, in µs: who else the cores served. */
  appMicrosPerRequest: number;
  wrkMicrosPerRequest: number;
  /** Its user-mode part: the proxy's own code, where the system part is mostly the kernel's network stack. */
  userMicrosPerRequest: number;
  /** req/s of each round, in order. */
  roundRequestsPerSecond: number[];
}

const CLOCK_TICKS_PER_SECOND = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/**
 * The CPU time a container has used so far, in µs, from its cgroup (cgroup v2's cpu.stat, or v1's
 * cpuacct.usage); NaN where neither can be read.
 */
function containerCpuMicros(containerId: string): () => number {
  const pid = Bun.spawnSync(["docker", "inspect", "-f", "{{.State.Pid}}", containerId]).stdout.toString().trim();
  const groups = (() => {
    try {
      return readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n");
    } catch {
      return [];
    }
  })();
  const pathOf = (controller: string) => groups.map((line) => line.split(":")).find(([, controllers]) => controllers === controller)?.[2];
  const unified = pathOf("");
  const v1 = pathOf("cpuacct") ?? pathOf("cpu,cpuacct");
  return () => {
    try {
      if (v1 !== undefined) {
        for (const mount of ["cpuacct", "cpu,cpuacct"]) {
          const file = `/sys/fs/cgroup/${mount}${v1}/cpuacct.usage`;
          if (existsSync(file)) return Number(readFileSync(file, "utf8")) / 1000;
        }
      }
      const stat = readFileSync(`/sys/fs/cgroup${unified}/cpu.stat`, "utf8");
      return Number(/^usage_usec (\d+)/m.exec(stat)?.[1] ?? NaN);
    } catch {
      return NaN;
    }
  };
}

/** User and system CPU time of a process so far, in clock ticks (all its threads). */
function cpuTicks(pid: number | undefined): { user: number; system: number } {
  if (!pid) return { user: NaN, system: NaN };
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]), system: Number(fields[12]) };
}

/**
 * At each connection count, ROUNDS rounds of one wrk run per target, every other round in reverse
 * order; keyed `<target>@<connections>`.
 */
async function measure(targets: Target[], duration: string, appCpuMicros: () => number, connectionCounts = CONNECTIONS): Promise<Map<string, Measurement>> {
  const results = new Map<string, Measurement>();
  for (const connections of connectionCounts) {
    const runs = new Map<string, { result: WrkResult; user: number; system: number; appMicros: number }[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of round % 2 ? targets.toReversed() : targets) {
        const before = cpuTicks(target.pid);
        const appBefore = appCpuMicros();
        const result = await wrk(target.url, connections, duration, target);
        const after = cpuTicks(target.pid);
        const targetRuns = runs.get(target.name) ?? [];
        targetRuns.push({ result, user: after.user - before.user, system: after.system - before.system, appMicros: appCpuMicros() - appBefore });
        runs.set(target.name, targetRuns);
      }
    }
    for (const [name, targetRuns] of runs) {
      const requests = targetRuns.reduce((sum, run) => sum + run.result.requests, 0);
      const microsPerRequest = (ticks: number) => (ticks / CLOCK_TICKS_PER_SECOND) * (1e6 / requests);
      const user = targetRuns.reduce((sum, run) => sum + run.user, 0);
      const system = targetRuns.reduce((sum, run) => sum + run.system, 0);
      const roundRequestsPerSecond = targetRuns.map((run) => run.result.requestsPerSecond);
      results.set(`${name}@${connections}`, {
        requests,
        requestsPerSecond: roundRequestsPerSecond.reduce((sum, rps) => sum + rps, 0) / targetRuns.length,
        p50Ms: median(targetRuns.map((run) => run.result.p50Ms)),
        p99Ms: median(targetRuns.map((run) => run.result.p99Ms)),
        errors: [...new Set(targetRuns.map((run) => run.result.errors).filter(Boolean))].join("; "),
        wrkCpuMicros: targetRuns.reduce((sum, run) => sum + run.result.wrkCpuMicros, 0),
        cpuMicrosPerRequest: microsPerRequest(user + system),
        appMicrosPerRequest: targetRuns.reduce((sum, run) => sum + run.appMicros, 0) / requests,
        wrkMicrosPerRequest: targetRuns.reduce((sum, run) => sum + run.result.wrkCpuMicros, 0) / requests,
        userMicrosPerRequest: microsPerRequest(user),
        roundRequestsPerSecond,
      });
    }
  }
  return results;
}

/** ours/nginx of each round, as `0.97 1.02 ...`. */
const roundRatios = (ours: Measurement, nginx: Measurement): string =>
  ours.roundRequestsPerSecond.map((rps, round) => (rps / nginx.roundRequestsPerSecond[round]!).toFixed(2)).join(" ");

/** The results table; each row's ratio is to `baselineOf(target)` at the same connection count. */
function printTable(targets: Target[], results: Map<string, Measurement>, baselineOf: (name: string) => string, connectionCounts = CONNECTIONS) {
  console.log(`\n| target | conns | req/s | p50 ms | p99 ms | vs nginx req/s | proxy CPU µs/req (user) | app CPU µs/req | wrk CPU µs/req | errors |`);
  console.log(`|---|---|---|---|---|---|---|---|---|---|`);
  for (const connections of connectionCounts) {
    for (const target of targets) {
      const result = results.get(`${target.name}@${connections}`)!;
      const baseline = results.get(`${baselineOf(target.name)}@${connections}`)!;
      const versus = `${(result.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x`;
      const cpu = `${fmt(result.cpuMicrosPerRequest, 1)} (${fmt(result.userMicrosPerRequest, 1)})`;
      const others = `${fmt(result.appMicrosPerRequest, 1)} | ${fmt(result.wrkMicrosPerRequest, 1)}`;
      console.log(`| ${target.name} | ${connections} | ${fmt(result.requestsPerSecond)} | ${fmt(result.p50Ms, 2)} | ${fmt(result.p99Ms, 2)} | ${versus} | ${cpu} | ${others} | ${result.errors || "-"} |`);
    }
  }
}

/**
 * GET /api/apps through the platform's API at `perSecond`, one after another, as a dashboard or a
 * CI polling it would; stop() says how many answered 200 a second.
 */
function apiLoad(baseUrl: string, key: string, perSecond: number): { stop(): Promise<number> } {
  let running = true;
  let answered = 0;
  const loadStarted = performance.now();
  const loop = (async () => {
    while (running) {
      const asked = performance.now();
      const response = await fetch(`${baseUrl}/api/apps`, { headers: { authorization: `Bearer ${key}` } });
      await response.arrayBuffer();
      if (response.status === 200) answered++;
      await Bun.sleep(Math.max(0, 1000 / perSecond - (performance.now() - asked)));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return answered / ((performance.now() - loadStarted) / 1000);
    },
  };
}

/** Until the platform prints that its HTTPS listener is up; its port. */
async function waitForHttpsListener(server: TestServer, timeoutMs = 20_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    const listening = /proxy listening on https:\/\/\S+:(\d+)/.exec(server.output);
    if (listening) return Number(listening[1]);
    await Bun.sleep(50);
  }
  throw new Error(`the platform printed no "proxy listening on https://" within ${timeoutMs / 1000} s: does this build have the HTTPS listener (PLATFORM_PROXY_TLS_PORT)?`);
}

async function main() {
  ensureTools();
  await ensureBinary();
  let server: TestServer | undefined;
  let key = "";
  const appIds = new Set<string>();
  const children: Subprocess[] = [];
  const api = (method: string, path: string, body?: unknown) => server!.request(method, path, { key, body });

  let cleanedUp = false;
  const cleanUp = async () => {
    if (cleanedUp) return;
    cleanedUp = true;
    for (const child of children) {
      child.kill("SIGTERM");
      await child.exited;
    }
    if (server?.process) {
      for (const appId of appIds) await api("DELETE", `/api/apps/${appId}`).catch(() => {});
      await server.stop();
    }
    removeTempDirs();
  };
  process.on("SIGINT", () => void cleanUp().then(() => process.exit(130)));

  try {
    // The proxy's rate limits would answer most of the load with 429: they are set out of reach
    // (their bookkeeping still runs on every request). So is the API's, for the busy-API rounds.
    const unlimited = {
      PLATFORM_PROXY_IP_BURST: "1000000000",
      PLATFORM_PROXY_IP_RPS: "1000000000",
      PLATFORM_PROXY_HOST_BURST: "1000000000",
      PLATFORM_PROXY_HOST_RPS: "1000000000",
      PLATFORM_PROXY_IP_MAX_CONNECTIONS: "100000",
      PLATFORM_API_RATE_BURST: "1000000000",
      PLATFORM_API_RATE_PER_SECOND: "1000000000",
    };
    // The event-loop watch at its default: the test servers' 20 ms makes it read /proc a hundred
    // times a second, about 2% of the proxy's CPU under this load (seen in a CPU profile).
    const certificateDir = tempDir("platform-bench-tls-");
    const certificate = wildcardCertificate(certificateDir, BENCH_DOMAIN);
    const ca = readFileSync(certificate.certFile, "utf8");
    const wrkScript = loopbackWrkScript(certificateDir);
    server = await startBinary({
      ...unlimited,
      PLATFORM_EVENT_LOOP_WARN_MS: "200",
      PLATFORM_DOMAIN: BENCH_DOMAIN,
      PLATFORM_PROXY_TLS_PORT: String(await freePort()),
      PLATFORM_TLS_CERT: certificate.certFile,
      PLATFORM_TLS_KEY: certificate.keyFile,
    });
    const proxyTlsPort = await waitForHttpsListener(server);
    key = (await server.createKey("bench")).key;
    const pid = server.process!.pid;

    // ---- the upstream app ----
    const form = new FormData();
    form.set("name", `bench-proxy-${Date.now().toString(36)}`);
    form.set("runtime", "bun");
    form.set("memoryMB", "256");
    form.set("file", new File([bunApp()], "app.zip", { type: "application/zip" }));
    const deployed = await api("POST", "/api/apps/deploy", form);
    if (deployed.status !== 202) throw new Error(`deploy answered ${deployed.status}: ${JSON.stringify(deployed.body)}`);
    const appId: string = deployed.body.app.id;
    const subdomain: string = deployed.body.app.subdomain;
    appIds.add(appId);
    const started = performance.now();
    let app: any;
    for (;;) {
      app = (await api("GET", `/api/apps/${appId}`)).body.app;
      if (app.status === "running") break;
      if (app.status === "failed") throw new Error(`the app failed: ${app.statusReason}`);
      if (performance.now() - started > DEPLOY_TIMEOUT_MS) throw new Error("the app did not start in time");
      await Bun.sleep(200);
    }
    // With a certificate for its host, plain HTTP would answer 308 to HTTPS: the HTTP runs need it off.
    const settings = await api("PUT", `/api/apps/${appId}/settings`, { httpsRedirect: false });
    if (settings.status !== 200) throw new Error(`PUT settings {httpsRedirect: false} answered ${settings.status}: ${JSON.stringify(settings.body)}`);
    const containerId = Bun.spawnSync(["docker", "ps", "-q", "--filter", `label=platform.app=${appId}`]).stdout.toString().trim().split("\n")[0];
    if (!containerId) throw new Error(`no running container of app ${appId}`);
    const inspected = Bun.spawnSync(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", containerId]);
    const containerIp = inspected.stdout.toString().trim().split(/\s+/)[0];
    if (!containerIp) throw new Error(`no address for container ${containerId}: ${inspected.stderr.toString()}`);
    const appCpuMicros = containerCpuMicros(containerId);
    const upstream = `${containerIp}:${app.servingPort}`;
    const proxyHost = `${subdomain}.${BENCH_DOMAIN}`;
    const proxyUrl = `http://127.0.0.1:${server.proxyPort}/`;
    const tls = { serverName: proxyHost, ca };
    await waitForHttp(`http://${upstream}/`);
    await waitForHttp(proxyUrl, { host: proxyHost });
    await waitForHttp(`https://127.0.0.1:${proxyTlsPort}/`, { host: proxyHost }, tls);

    // ---- nginx ----
    const nginxDir = tempDir("platform-bench-nginx-");
    const nginxPort = await freePort();
    const nginxMinimalPort = await freePort();
    const nginxTlsPort = await freePort();
    writeFileSync(join(nginxDir, "nginx.conf"), nginxConfig(nginxDir, nginxPort, nginxMinimalPort, nginxTlsPort, upstream, certificate));
    const nginx = Bun.spawn([nginxBinary(), "-p", nginxDir, "-c", join(nginxDir, "nginx.conf")], { stdout: "ignore", stderr: "pipe" });
    children.push(nginx);
    await waitForHttp(`http://127.0.0.1:${nginxPort}/`);
    const nginxWorker = nginxWorkerPid(nginx.pid);
    await waitForHttp(`https://127.0.0.1:${nginxTlsPort}/`, { host: proxyHost }, tls);

    // ---- the ceiling of a proxy in JavaScript on Bun: scripts/bench/bare-relay.ts ----
    const barePort = await freePort();
    const bare = Bun.spawn([process.execPath, resolve(import.meta.dir, "bare-relay.ts")], {
      env: { ...process.env, BARE_RELAY_PORT: String(barePort), BARE_RELAY_UPSTREAM: upstream },
      stdout: "ignore",
      stderr: "inherit",
    });
    children.push(bare);
    await waitForHttp(`http://127.0.0.1:${barePort}/`);

    console.log(`\nupstream ${upstream} (bun app, 1 KiB answers); nginx 1 worker, keepalive ${NGINX_KEEPALIVE}; wrk -t2 -d${DURATION} --latency, ${ROUNDS} rounds`);
    const targets: Target[] = [
      { name: "direct", url: `http://${upstream}/` },
      { name: "nginx", url: `http://127.0.0.1:${nginxPort}/`, pid: nginxWorker },
      { name: "nginx-minimal", url: `http://127.0.0.1:${nginxMinimalPort}/`, pid: nginxWorker },
      { name: "bare-bun", url: `http://127.0.0.1:${barePort}/`, pid: bare.pid },
      { name: "ours", url: proxyUrl, host: proxyHost, pid },
    ];
    const busyTargets = targets.filter((target) => target.name === "nginx" || target.name === "ours");
    const httpsTargets: Target[] = [
      { name: "nginx https", url: `https://${proxyHost}:${nginxTlsPort}/`, script: wrkScript, pid: nginxWorker },
      { name: "ours https", url: `https://${proxyHost}:${proxyTlsPort}/`, script: wrkScript, pid },
      { name: "nginx https new-conn", url: `https://${proxyHost}:${nginxTlsPort}/`, script: wrkScript, newConnections: true, pid: nginxWorker },
      { name: "ours https new-conn", url: `https://${proxyHost}:${proxyTlsPort}/`, script: wrkScript, newConnections: true, pid },
    ];
    // A short warm-up of each target (JIT, connection pools), not counted.
    for (const target of [...targets, ...httpsTargets]) await wrk(target.url, CONNECTIONS[0]!, "2s", target);

    const rssBefore = residentMegabytes(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, residentMegabytes(pid))), 200);
    let results: Map<string, Measurement>;
    let rssAfterHttp: number;
    let httpsResults: Map<string, Measurement>;
    let busyResults: Map<string, Measurement>;
    let apiRate: number;
    try {
      results = await measure(targets, DURATION, appCpuMicros);
      rssAfterHttp = residentMegabytes(pid);
      const load = apiLoad(server.baseUrl, key, API_LOAD_PER_SECOND);
      busyResults = await measure(busyTargets, DURATION, appCpuMicros, [CONNECTIONS[0]!]);
      apiRate = await load.stop();
      httpsResults = await measure(httpsTargets, HTTPS_DURATION, appCpuMicros);
    } finally {
      clearInterval(sampler);
    }
    const rssAfter = residentMegabytes(pid);

    printTable(targets, results, () => "nginx");
    console.log("");
    for (const connections of CONNECTIONS) {
      const ours = results.get(`ours@${connections}`)!;
      const nginxResult = results.get(`nginx@${connections}`)!;
      const ratio = ours.requestsPerSecond / nginxResult.requestsPerSecond;
      const verdict = ratio >= 1 && ours.p99Ms <= nginxResult.p99Ms ? "meets" : "misses";
      const invalid = ours.errors || nginxResult.errors ? ` (NOT VALID: ${ours.errors || nginxResult.errors})` : "";
      const cpu = `CPU ${fmt(ours.cpuMicrosPerRequest, 1)} µs/req vs ${fmt(nginxResult.cpuMicrosPerRequest, 1)} µs/req`;
      console.log(`ours/nginx at ${connections}: ${ratio.toFixed(2)}x req/s (target >= 1.00x), p99 ${fmt(ours.p99Ms, 2)} ms vs ${fmt(nginxResult.p99Ms, 2)} ms: ${verdict} the target; ${cpu}; rounds ${roundRatios(ours, nginxResult)}${invalid}`);
      // How close to nginx a proxy on Bun's sockets can come at all on this machine, for scale.
      const bare = results.get(`bare-bun@${connections}`)!;
      console.log(`  ceiling, bare-bun/nginx at ${connections}: ${(bare.requestsPerSecond / nginxResult.requestsPerSecond).toFixed(2)}x req/s, p99 ${fmt(bare.p99Ms, 2)} ms vs ${fmt(nginxResult.p99Ms, 2)} ms; rounds ${roundRatios(bare, nginxResult)}`);
    }

    console.log(`\nWhile the platform's API answers GET /api/apps ${apiRate.toFixed(0)} times a second (asked for ${API_LOAD_PER_SECOND}; ours's CPU includes the API's):`);
    printTable(busyTargets, busyResults, () => "nginx", [CONNECTIONS[0]!]);
    const busyOurs = busyResults.get(`ours@${CONNECTIONS[0]}`)!;
    const busyNginx = busyResults.get(`nginx@${CONNECTIONS[0]}`)!;
    console.log(
      `\nours/nginx at ${CONNECTIONS[0]} with the API busy: ${(busyOurs.requestsPerSecond / busyNginx.requestsPerSecond).toFixed(2)}x req/s, p99 ${fmt(busyOurs.p99Ms, 2)} ms vs ${fmt(busyNginx.p99Ms, 2)} ms; rounds ${roundRatios(busyOurs, busyNginx)}`,
    );

    console.log(`\nHTTPS (ECDSA P-256 *.${BENCH_DOMAIN}, SNI ${proxyHost}; new-conn: Connection: close); wrk -t2 -d${HTTPS_DURATION} --latency, ${ROUNDS} rounds`);
    printTable(httpsTargets, httpsResults, (name) => name.replace("ours", "nginx"));
    const resumes = async (port: number) => ((await resumesTls13Sessions(port, proxyHost, certificateDir)) ? "yes" : "no");
    console.log(`\nTLS 1.3 session resumption (wrk's reconnects resume when the server lets them): nginx ${await resumes(nginxTlsPort)}, ours ${await resumes(proxyTlsPort)}`);
    console.log("");
    for (const connections of CONNECTIONS) {
      for (const mode of ["https", "https new-conn"]) {
        const ours = httpsResults.get(`ours ${mode}@${connections}`)!;
        const nginxResult = httpsResults.get(`nginx ${mode}@${connections}`)!;
        const invalid = ours.errors || nginxResult.errors ? ` (NOT VALID: ${ours.errors || nginxResult.errors})` : "";
        console.log(
          `ours/nginx ${mode} at ${connections}: ${(ours.requestsPerSecond / nginxResult.requestsPerSecond).toFixed(2)}x req/s, p99 ${fmt(ours.p99Ms, 2)} ms vs ${fmt(nginxResult.p99Ms, 2)} ms; rounds ${roundRatios(ours, nginxResult)}${invalid}`,
        );
      }
    }
    console.log(
      `platform RSS: ${rssBefore.toFixed(1)} MB before, ${rssAfterHttp.toFixed(1)} MB after the HTTP runs: growth ${(rssAfterHttp - rssBefore).toFixed(1)} MB (target < ${RSS_TARGET_MB} MB); ` +
        `${rssAfter.toFixed(1)} MB after the HTTPS runs (peak ${rssPeak.toFixed(1)} MB)`,
    );
  } catch (error) {
    printServerTail(server);
    throw error;
  } finally {
    await cleanUp();
  }
}

await runBenchmark(main);
