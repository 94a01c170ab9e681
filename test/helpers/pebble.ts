// Pebble, Let's Encrypt's test ACME server, and pebble-challtestsrv as its DNS, both on loopback
// (Debian's `pebble` package). Every name resolves to 127.0.0.1 unless a test says otherwise, and
// Pebble validates HTTP-01 challenges on the port given: the platform's public proxy.
import { spawn, type Subprocess } from "bun";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports";
import { tempDir } from "./temp";
import { startDnsServer, type DnsServer } from "./dns-server";

export interface Pebble {
  /** The ACME directory URL to give the platform. */
  directoryUrl: string;
  /** Trust anchor for Pebble's own HTTPS listener (PLATFORM_ACME_CA_FILE). */
  listenerCaFile: string;
  /** The DNS server Pebble and the platform resolve test names with, as host:port. */
  dnsServer: string;
  /** That server, to set records (TXT records of domain verification among them). */
  dns: DnsServer;
  /** The root of the certificates Pebble issues (it makes a new one at every start). */
  issuingRootPem(): Promise<string>;
  /** Makes `host` resolve to `address` instead of 127.0.0.1. */
  resolve(host: string, address: string): Promise<void>;
  /** Everything Pebble printed, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface PebbleOptions {
  /** The port Pebble sends HTTP-01 validation requests to. */
  httpPort: number;
  /** How long the certificates it issues are valid, in seconds. */
  validitySeconds?: number;
}

async function run(command: string[]) {
  const child = spawn(command, { stdout: "ignore", stderr: "pipe" });
  if ((await child.exited) !== 0) throw new Error(`${command.join(" ")}: ${await new Response(child.stderr).text()}`);
}

export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const dir = tempDir("pebble-");
  const listenerCaFile = join(dir, "listener.crt");
  const listenerKey = join(dir, "listener.key");
  await run([
    "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-keyout", listenerKey, "-out", listenerCaFile, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
  ]);
  const acmePort = freePort();
  const managementPort = freePort();
  const configFile = join(dir, "pebble.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: listenerCaFile,
        privateKey: listenerKey,
        httpPort: options.httpPort,
        tlsPort: freePort(),
        ocspResponderURL: "",
        externalAccountBindingRequired: false,
        ...(options.validitySeconds ? { certificateValidityPeriod: options.validitySeconds } : {}),
      },
    }),
  );
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  const dns = await startDnsServer();
  const pebble: Subprocess = spawn(["pebble", "-config", configFile, "-dnsserver", dns.address], {
    // No artificial validation delays; no nonces refused at random (tests must not depend on luck).
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  void collect(pebble.stdout as ReadableStream<Uint8Array>);
  void collect(pebble.stderr as ReadableStream<Uint8Array>);

  const ca = await Bun.file(listenerCaFile).text();
  const directoryUrl = `https://127.0.0.1:${acmePort}/dir`;
  const management = `https://127.0.0.1:${managementPort}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const up = await fetch(directoryUrl, { tls: { ca } }).then((response) => response.ok, () => false);
    if (up) break;
    if (Date.now() > deadline) {
      pebble.kill();
      await dns.stop();
      throw new Error(`pebble did not start:\n${output}`);
    }
    await Bun.sleep(100);
  }

  return {
    directoryUrl,
    listenerCaFile,
    dnsServer: dns.address,
    dns,
    async issuingRootPem() {
      const response = await fetch(`${management}/roots/0`, { tls: { ca } });
      if (!response.ok) throw new Error(`pebble root: ${response.status}`);
      return response.text();
    },
    resolve: (host, address) => dns.setAddresses(host, [address]),
    output: () => `${output}${dns.output()}`,
    async stop() {
      pebble.kill();
      await Promise.all([pebble.exited, dns.stop()]);
    },
  };
}
