// A DNS server on loopback whose records a test sets: pebble-challtestsrv (Debian's `pebble`
// package), through its management HTTP API. By default every name has the A record 127.0.0.1 and
// no TXT record. Give the platform `PLATFORM_DNS_SERVERS: dns.address`; no other resolver is asked.
import { spawn, type Subprocess } from "bun";
import { freePort } from "./ports";

export interface DnsServer {
  /** host:port, for PLATFORM_DNS_SERVERS or Pebble's -dnsserver. */
  address: string;
  /** Makes `host` answer A and AAAA queries with exactly these addresses (none: no record of its own). */
  setAddresses(host: string, addresses: string[]): Promise<void>;
  /** Adds a TXT record of `host` with `value` (a name may have several). */
  addTxt(host: string, value: string): Promise<void>;
  /** Removes every TXT record of `host`. */
  clearTxt(host: string): Promise<void>;
  /** Every name without A records of its own answers with `address`; "" for none. */
  setDefaultA(address: string): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

/** A port free for both TCP and UDP on loopback (the DNS server listens on both). */
async function freeTcpAndUdpPort(): Promise<number> {
  for (;;) {
    const port = freePort();
    try {
      const udp = await Bun.udpSocket({ hostname: "127.0.0.1", port });
      udp.close();
      return port;
    } catch {
      continue;
    }
  }
}

const fqdn = (host: string) => (host.endsWith(".") ? host : `${host}.`);

export async function startDnsServer(): Promise<DnsServer> {
  const dnsPort = await freeTcpAndUdpPort();
  const managementPort = freePort();
  const address = `127.0.0.1:${dnsPort}`;
  let output = "";
  const child: Subprocess = spawn(
    ["pebble-challtestsrv", "-http01", "", "-https01", "", "-tlsalpn01", "", "-dns01", address, "-management", `127.0.0.1:${managementPort}`, "-defaultIPv6", ""],
    { stdout: "pipe", stderr: "pipe" },
  );
  for (const stream of [child.stdout, child.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    })();
  }
  const manage = async (path: string, body: object) => {
    const response = await fetch(`http://127.0.0.1:${managementPort}/${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`challtestsrv ${path}: ${response.status} ${await response.text()}`);
  };
  const deadline = Date.now() + 15_000;
  while (!(await manage("set-default-ipv4", { ip: "127.0.0.1" }).then(() => true, () => false))) {
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`pebble-challtestsrv did not start:\n${output}`);
    }
    await Bun.sleep(50);
  }
  return {
    address,
    async setAddresses(host, addresses) {
      // add-a and add-aaaa add to what a name has: cleared first.
      await manage("clear-a", { host: fqdn(host) });
      await manage("clear-aaaa", { host: fqdn(host) });
      const ipv4 = addresses.filter((address) => !address.includes(":"));
      const ipv6 = addresses.filter((address) => address.includes(":"));
      if (ipv4.length > 0) await manage("add-a", { host: fqdn(host), addresses: ipv4 });
      if (ipv6.length > 0) await manage("add-aaaa", { host: fqdn(host), addresses: ipv6 });
    },
    addTxt: (host, value) => manage("set-txt", { host: fqdn(host), value }),
    clearTxt: (host) => manage("clear-txt", { host: fqdn(host) }),
    setDefaultA: (ip) => manage("set-default-ipv4", { ip }),
    output: () => output,
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}
