// Whether a custom domain's DNS points at this server: its A and AAAA records compared with the
// server's public addresses (PLATFORM_PUBLIC_IP, or those detected on its interfaces), with one
// sentence telling the user what to change. Lookups are cached per host and never throw.
import { promises as dnsPromises } from "node:dns";
import { isIPv4, isIPv6 } from "node:net";
import os from "node:os";

export type DnsStatus = "ok" | "mismatch" | "unresolved" | "unknown";

export interface DnsCheck {
  status: DnsStatus;
  /** The A and AAAA addresses the name resolved to (sorted, deduplicated). */
  addresses: string[];
  /** The addresses it should resolve to (this server's public ones); empty: unknown. */
  expected: string[];
  /** One sentence for a person: what is wrong and what to do, or null when ok. */
  message: string | null;
  checkedAt: string;
}

export interface DnsCheckerOptions {
  /** This server's public addresses. */
  expected: string[];
  /** DNS servers as host:port; empty: the system's resolver. */
  servers: string[];
  timeoutMs?: number;
  cacheMs?: number;
}

function ipv4Number(address: string): number {
  return address.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);
}

/** Address blocks that are not globally reachable (IANA special-purpose registry). Docker's
 *  default bridge pools (172.17/16 to 172.31/16, 192.168/16) fall inside the private ones. */
const nonPublicIpv4Blocks = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
].map(([base, bits]) => ({ base: ipv4Number(base as string), size: 2 ** (32 - (bits as number)) }));

export function isPublicIpv4(address: string): boolean {
  const value = ipv4Number(address);
  return !nonPublicIpv4Blocks.some(({ base, size }) => value >= base && value < base + size);
}

/** The first two 16-bit groups of an IPv6 address, enough to place it in the blocks below. */
function leadingIpv6Groups(address: string): [number, number] {
  const [head] = address.split("::");
  const groups = head === "" ? [] : head.split(":").map((group) => parseInt(group, 16));
  return [groups[0] ?? 0, groups[1] ?? 0];
}

export function isPublicIpv6(address: string): boolean {
  const [first, second] = leadingIpv6Groups(address.split("%")[0]);
  // Global unicast is 2000::/3; everything else (loopback, link-local, ULA fc00::/7, multicast,
  // IPv4-mapped) lies outside it.
  if ((first & 0xe000) !== 0x2000) return false;
  if (first === 0x2001 && second < 0x0200) return false; // 2001::/23, IETF protocol assignments (Teredo among them)
  if (first === 0x2001 && second === 0x0db8) return false; // 2001:db8::/32, documentation
  if (first === 0x3fff && second < 0x1000) return false; // 3fff::/20, documentation
  return true;
}

/** The canonical text of an address (IPv6 lower-case and compressed), so that equal addresses compare equal. */
function canonicalAddress(address: string): string {
  return isIPv6(address) ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address;
}

function sortedUnique(addresses: string[]): string[] {
  return [...new Set(addresses.map(canonicalAddress))].sort();
}

/** This machine's public addresses: the global unicast addresses of its interfaces. No network traffic. */
export function detectPublicAddresses(interfaces = os.networkInterfaces()): string[] {
  const addresses = Object.values(interfaces)
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal)
    .map((entry) => entry.address)
    .filter((address) => (isIPv4(address) ? isPublicIpv4(address) : isIPv6(address) && isPublicIpv6(address)));
  return sortedUnique(addresses);
}

function listed(addresses: string[]): string {
  return addresses.join(", ");
}

/** What to change in DNS so that the records name only expected addresses. */
function mismatchAdvice(foreign: string[], expected: string[]): string {
  const advice: string[] = [];
  for (const [record, isFamily] of [["A", isIPv4], ["AAAA", isIPv6]] as const) {
    if (!foreign.some((address) => isFamily(address))) continue;
    const expectedInFamily = expected.filter((address) => isFamily(address));
    advice.push(expectedInFamily.length > 0 ? `point its ${record} record at ${listed(expectedInFamily)}` : `remove its ${record} record`);
  }
  return advice.join(" and ");
}

function judged(host: string, addresses: string[], expected: string[]): Pick<DnsCheck, "status" | "message"> {
  if (expected.length === 0) {
    return { status: "unknown", message: `This server's public address is not known, so where ${host} points cannot be checked: set PLATFORM_PUBLIC_IP.` };
  }
  if (addresses.length === 0) {
    const records = [expected.some((address) => isIPv4(address)) ? "an A" : "", expected.some((address) => isIPv6(address)) ? "an AAAA" : ""];
    return {
      status: "unresolved",
      message: `${host} does not resolve (no A or AAAA record, or no answer in time): add ${records.filter(Boolean).join(" or ")} record pointing at ${listed(expected)}.`,
    };
  }
  const foreign = addresses.filter((address) => !expected.includes(address));
  if (foreign.length > 0) {
    return {
      status: "mismatch",
      message: `${host} resolves to ${listed(foreign)}, which is not this server (${listed(expected)}): ${mismatchAdvice(foreign, expected)}.`,
    };
  }
  return { status: "ok", message: null };
}

/** A host name as DNS compares it: case-insensitive, the root's trailing dot optional. */
function normalizedHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, "");
}

interface CachedCheck {
  check: Promise<DnsCheck>;
  /** Date.now() when the lookup finished; undefined while it runs. */
  settledAt?: number;
}

export class DnsChecker {
  private readonly expected: string[];
  private readonly servers: string[];
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, CachedCheck>();

  constructor(options: DnsCheckerOptions) {
    this.expected = sortedUnique(options.expected);
    this.servers = options.servers;
    this.timeoutMs = options.timeoutMs ?? 3000;
    this.cacheMs = options.cacheMs ?? 60_000;
  }

  /** Resolves A and AAAA of `host` and compares them with the expected addresses. Cached per host
   *  for cacheMs; concurrent calls for one host share one lookup. Never throws. */
  check(host: string): Promise<DnsCheck> {
    const name = normalizedHost(host);
    this.dropExpired();
    const cached = this.cache.get(name);
    if (cached) return cached.check;
    const entry: CachedCheck = {
      check: this.lookup(name).then((addresses) => {
        entry.settledAt = Date.now();
        return { ...judged(name, addresses, this.expected), addresses, expected: this.expected, checkedAt: new Date().toISOString() };
      }),
    };
    this.cache.set(name, entry);
    return entry.check;
  }

  forget(host: string): void {
    this.cache.delete(normalizedHost(host));
  }

  private dropExpired() {
    const now = Date.now();
    for (const [name, entry] of this.cache) {
      if (entry.settledAt !== undefined && now - entry.settledAt >= this.cacheMs) this.cache.delete(name);
    }
  }

  /** The A and AAAA addresses of `name`; a record type that fails or times out adds none. */
  private lookup(name: string): Promise<string[]> {
    return this.resolving(async (resolver) => {
      const answers = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
      return sortedUnique(answers.flatMap((answer) => (answer.status === "fulfilled" ? answer.value : [])));
    }, []);
  }

  /**
   * The TXT records of `name` (each record's strings joined, as RFC 7208 reads them), looked up
   * now, never cached: null when the lookup failed or timed out, empty when the name has none.
   * The answer is a DNS message, bounded by the protocol (64 KiB at most).
   */
  txtRecords(host: string): Promise<string[] | null> {
    return this.resolving(async (resolver) => {
      try {
        return (await resolver.resolveTxt(normalizedHost(host))).map((strings) => strings.join(""));
      } catch (error) {
        const code = (error as { code?: string }).code;
        return code === "ENOTFOUND" || code === "ENODATA" ? [] : null;
      }
    }, null);
  }

  /** `query` with a resolver of the configured servers, held to timeoutMs; `fallback` when the resolver refuses the query outright. */
  private async resolving<Answer>(query: (resolver: dnsPromises.Resolver) => Promise<Answer>, fallback: Answer): Promise<Answer> {
    let timer: Timer | undefined;
    try {
      const resolver = new dnsPromises.Resolver({ timeout: this.timeoutMs, tries: 1 });
      if (this.servers.length > 0) resolver.setServers(this.servers);
      // Bun's resolver counts its timeout in whole seconds (300 ms waits a second), so a timer of
      // our own holds the lookup to timeoutMs.
      timer = setTimeout(() => resolver.cancel(), this.timeoutMs);
      return await query(resolver);
    } catch {
      return fallback;
    } finally {
      clearTimeout(timer);
    }
  }
}
