// Ports for servers a test starts later (the platform's proxy, Pebble, a stand-in): free when
// picked, and never picked twice in one test process. They come from below the system's
// ephemeral range, which a port-0 probe would pick from, so that nothing binding port 0 or
// connecting out in the meantime can take one before its server binds it. Picked by port-0
// probes, a CI run's platform could not listen on its proxy's port ("Failed to listen").
import { readFileSync } from "node:fs";

const handedOut = new Set<number>();

/** The first port of the ephemeral range (Linux's default when the kernel does not say). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > 4_000) return first;
  } catch {
    // Not Linux: its default.
  }
  return 32_768;
}

const RANGE_END = ephemeralStart();
/** 30000-32767 by default: clear of the databases' host ports (PLATFORM_DB_PORT_RANGE, and 20000-30000 in their tests). */
const RANGE_START = RANGE_END - 2_768;

/** A TCP port nothing listens on at `hostname` now, not handed out before in this process. */
export function freePort(hostname = "127.0.0.1"): number {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const port = RANGE_START + Math.floor(Math.random() * (RANGE_END - RANGE_START));
    if (handedOut.has(port)) continue;
    try {
      Bun.listen({ hostname, port, socket: { data() {} } }).stop(true);
    } catch {
      continue;
    }
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port between ${RANGE_START} and ${RANGE_END}`);
}
