// Which peers may speak for a client: a list of CIDR ranges (IPv4 and IPv6), and the client
// address behind a chain of proxies. Pure: no server, no config; the API uses it for
// PLATFORM_TRUSTED_PROXIES and the public proxy can use it the same way.

/** An address as a number of its family's width: 32 bits for IPv4, 128 for IPv6. */
interface ParsedAddress {
  family: 4 | 6;
  value: bigint;
}

export interface CidrRange {
  family: 4 | 6;
  /** The network address (host bits zero). */
  network: bigint;
  prefixLength: number;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseIpv4(text: string): bigint | null {
  const match = IPV4.exec(text);
  if (!match) return null;
  let value = 0n;
  for (const part of match.slice(1)) {
    // "010" is octal to some parsers and decimal to others: refuse the ambiguity.
    if (part.length > 1 && part.startsWith("0")) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseIpv6(text: string): bigint | null {
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || text.split("::").length > 2) return null;
  let groups: string[];
  let tail: bigint | null = null;
  let head = text;
  // An IPv4 tail ("::ffff:192.0.2.1") stands for the last two groups.
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail = parseIpv4(text.slice(lastColon + 1));
    if (tail === null) return null;
    // "::192.0.2.1" keeps its "::"; "64:ff9b::192.0.2.1" and "::ffff:192.0.2.1" drop the last ":".
    head = text.slice(0, lastColon) + (text[lastColon - 1] === ":" ? ":" : "");
  }
  const width = tail === null ? 8 : 6;
  if (head.includes("::")) {
    const [left, right] = head.split("::") as [string, string];
    const leftGroups = left ? left.split(":") : [];
    const rightGroups = right ? right.split(":") : [];
    const missing = width - leftGroups.length - rightGroups.length;
    if (missing < 1) return null;
    groups = [...leftGroups, ...Array<string>(missing).fill("0"), ...rightGroups];
  } else {
    groups = head === "" ? [] : head.split(":");
  }
  if (groups.length !== width) return null;
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9A-Fa-f]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(parseInt(group, 16));
  }
  return tail === null ? value : (value << 32n) | tail;
}

const IPV4_MAPPED_PREFIX = 0xffffn << 32n;

/**
 * "192.0.2.1", "2001:db8::1", "[2001:db8::1]", "fe80::1%eth0": the address, or null when the
 * text is not one. IPv4-mapped IPv6 addresses (::ffff:192.0.2.1, how a dual-stack socket shows
 * an IPv4 peer) are read as the IPv4 address, so one rule covers both spellings.
 */
export function parseAddress(text: string): ParsedAddress | null {
  let candidate = text.trim();
  if (candidate.startsWith("[") && candidate.endsWith("]")) candidate = candidate.slice(1, -1);
  const ipv4 = parseIpv4(candidate);
  if (ipv4 !== null) return { family: 4, value: ipv4 };
  const zone = candidate.indexOf("%");
  if (zone > 0) candidate = candidate.slice(0, zone);
  const ipv6 = parseIpv6(candidate);
  if (ipv6 === null) return null;
  if (ipv6 >> 32n === IPV4_MAPPED_PREFIX >> 32n) return { family: 4, value: ipv6 & 0xffffffffn };
  return { family: 6, value: ipv6 };
}

export function isIpLiteral(text: string): boolean {
  return parseAddress(text) !== null;
}

/** "10.0.0.0/8", "2001:db8::/32", or one address ("192.0.2.1" is "/32"). Throws on anything else. */
export function parseCidr(text: string): CidrRange {
  const [addressText, prefixText, extra] = text.trim().split("/");
  const address = parseAddress(addressText ?? "");
  const bits = address?.family === 4 ? 32 : 128;
  const prefixLength = prefixText === undefined ? bits : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  // "::ffff:10.0.0.0/104" would need its prefix moved to IPv4's width: ask for the IPv4 form.
  const mappedWithPrefix = address?.family === 4 && prefixText !== undefined && addressText!.includes(":");
  if (!address || extra !== undefined || !(prefixLength >= 0 && prefixLength <= bits) || mappedWithPrefix) {
    throw new Error(`"${text}" is not an IPv4 or IPv6 address or CIDR range`);
  }
  const hostBits = BigInt(bits - prefixLength);
  return { family: address.family, network: (address.value >> hostBits) << hostBits, prefixLength };
}

/** A comma-separated list of CIDR ranges; empty text is an empty list. Throws on a bad entry. */
export function parseCidrList(text: string): CidrRange[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean)
    .map(parseCidr);
}

export function cidrContains(range: CidrRange, address: string): boolean {
  const parsed = parseAddress(address);
  if (!parsed || parsed.family !== range.family) return false;
  const hostBits = BigInt((range.family === 4 ? 32 : 128) - range.prefixLength);
  return parsed.value >> hostBits === range.network >> hostBits;
}

export function inAnyRange(ranges: readonly CidrRange[], address: string | null): boolean {
  return address !== null && ranges.some((range) => cidrContains(range, address));
}

const LOOPBACK = [parseCidr("127.0.0.0/8"), parseCidr("::1/128")];

export function isLoopback(address: string | null): boolean {
  return inAnyRange(LOOPBACK, address);
}

/**
 * The client behind a chain of proxies. Each proxy appends the address it was connected from to
 * `X-Forwarded-For`, so only the entries our trusted proxies added can be believed: walk from the
 * right (the socket peer first) and stop at the first address no trusted proxy has. Anything left
 * of it was written by the client and may be forged. An untrusted peer is the client itself; a
 * malformed entry ends the walk at the last address that was believed.
 */
export function clientBehindProxies(ranges: readonly CidrRange[], peerAddress: string | null, forwardedFor: string | null): string | null {
  if (peerAddress === null || !inAnyRange(ranges, peerAddress) || !forwardedFor) return peerAddress;
  let client = peerAddress;
  const hops = forwardedFor.split(",").map((hop) => hop.trim());
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hops[index]!;
    if (!isIpLiteral(hop)) return client;
    client = hop;
    if (!inAnyRange(ranges, hop)) return client;
  }
  return client;
}

/** The right-most value of a list header a trusted proxy set (`X-Forwarded-Proto: https`), else null. */
export function lastHeaderValue(value: string | null): string | null {
  const last = value?.split(",").at(-1)?.trim();
  return last ? last : null;
}
