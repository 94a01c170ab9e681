// The readers of single PLATFORM_* settings: each checks one variable and says what is wrong with it.
import { parseCidr, parseCidrList, type CidrRange } from "../http/trusted-proxies";

/** Ports `first` to `last`, both included. */
export interface PortRange {
  first: number;
  last: number;
}

export function integerSetting(env: Record<string, string | undefined>, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    throw new Error(`${name} must be a number >= ${min}, got "${raw}"`);
  }
  return value;
}

export function percentSetting(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const value = integerSetting(env, name, fallback);
  if (value > 100) throw new Error(`${name} must be a percentage from 0 to 100, got "${env[name]}"`);
  return value;
}

/** What a container's `cpus` may be, for apps, databases and builds alike. */
export const CONTAINER_CPUS = { minimum: 0.1, maximum: 16 };

export function cpusSetting(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  const { minimum, maximum } = CONTAINER_CPUS;
  if (!Number.isFinite(value) || value < minimum || value > maximum) throw new Error(`${name} must be a number from ${minimum} to ${maximum}, got "${raw}"`);
  return value;
}

/** Empty or "root": the image's own user. Otherwise a numeric uid or uid:gid (names may not exist in the image). */
export function appUserSetting(env: Record<string, string | undefined>, name: string, fallback: string): string | undefined {
  const raw = env[name];
  if (raw === "" || raw === "root" || raw === "0" || raw === "0:0") return undefined;
  const value = raw ?? fallback;
  if (!/^\d{1,9}(:\d{1,9})?$/.test(value)) throw new Error(`${name} must be a uid or uid:gid (numbers), "root" or empty, got "${value}"`);
  return value;
}

export function onOffSetting(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new Error(`${name} must be "on" or "off", got "${raw}"`);
}

/** Comma-separated IPv4 addresses or CIDRs, e.g. "169.254.0.0/16,10.0.0.5", kept as written (iptables takes them so). */
export function ipv4CidrListSetting(env: Record<string, string | undefined>, name: string, fallback: string): string[] {
  const items = (env[name] ?? fallback).split(",").map((item) => item.trim()).filter(Boolean);
  for (const item of items) {
    let family: number | undefined;
    try {
      family = parseCidr(item).family;
    } catch {}
    if (family !== 4 || item.includes(":")) throw new Error(`${name} must be comma-separated IPv4 addresses or CIDRs, got "${item}"`);
  }
  return items;
}

export function trustedProxiesSetting(env: Record<string, string | undefined>, name: string): CidrRange[] {
  try {
    return parseCidrList(env[name] ?? "");
  } catch (error) {
    throw new Error(`${name} must be comma-separated IPv4 or IPv6 addresses or CIDRs: ${(error as Error).message}`);
  }
}

/** Comma-separated registry hosts as image references name them (`host` or `host:port`), lowercased. */
export function registryListSetting(env: Record<string, string | undefined>, name: string): string[] {
  const items = (env[name] ?? "").split(",").map((item) => item.trim().toLowerCase()).filter(Boolean);
  const bad = items.find((item) => !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/.test(item));
  if (bad !== undefined) throw new Error(`${name} must be comma-separated registry hosts (host or host:port), got "${bad}"`);
  return items;
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** Comma-separated host names, lowercased; "*" allows any. The fallback's odd names are left out. */
export function hostListSetting(env: Record<string, string | undefined>, name: string, fallback: string[]): string[] {
  const lowered = (text: string) => text.trim().toLowerCase().replace(/\.$/, "");
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback.map(lowered).filter((item) => HOST_NAME.test(item));
  const names = raw.split(",").map(lowered).filter(Boolean);
  const bad = names.find((item) => item !== "*" && !HOST_NAME.test(item));
  if (bad !== undefined) throw new Error(`${name} must be comma-separated host names (or "*"), got "${bad}"`);
  return names;
}

/** An http(s) URL without credentials (a token in it would reach logs) or a trailing slash. */
export function baseUrlSetting(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = textSetting(env, name, fallback);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new Error(`${name} must be an http(s) URL without credentials, query or fragment, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

export function textSetting(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === "" ? fallback : raw;
}

/** "first-last", e.g. "15400-15999". */
export function portRangeSetting(env: Record<string, string | undefined>, name: string, fallback: string): PortRange {
  const raw = textSetting(env, name, fallback);
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1 || last > 65_535 || first > last) {
    throw new Error(`${name} must be "first-last" with 1 <= first <= last <= 65535, got "${raw}"`);
  }
  return { first, last };
}
