// Host ports of databases. Each database gets one at creation, from PLATFORM_DB_PORT_RANGE, and
// its container publishes it on every start after, so the connection strings given out stay
// valid. A range of its own keeps these ports out of the ephemeral range the kernel hands to
// outgoing connections, which could otherwise take a stopped database's port in the meantime.
import { createServer } from "node:net";
import type { PortRange } from "../config";
import { ApiError } from "../http/errors";

/** Whether the port can be bound right now. */
export type PortCheck = (port: number) => Promise<boolean>;

/**
 * Binds the port on the bind address for a moment. In use (or privileged) answers false; any
 * other refusal is the address itself (not on this host...): 409 OPERATION_FAILED naming it.
 */
export function bindCheck(bindAddress: string): PortCheck {
  return (port) =>
    new Promise((resolve, reject) => {
      const server = createServer();
      server.once("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "EADDRINUSE" || error.code === "EACCES") return resolve(false);
        reject(new ApiError("OPERATION_FAILED", `No port can be published on PLATFORM_DB_BIND_ADDRESS ${bindAddress}: ${error.message}`));
      });
      server.listen({ port, host: bindAddress, exclusive: true }, () => server.close(() => resolve(true)));
    });
}

/**
 * The first port of the range, going round from `start`, that is not `taken` (held by a
 * database) and can be bound now; 409 PORT_RANGE_EXHAUSTED when there is none. The search starts
 * at a random place so that two platforms on one host (or two test runs) rarely want the same port.
 */
export async function chooseHostPort(range: PortRange, taken: ReadonlySet<number>, canBind: PortCheck, start?: number): Promise<number> {
  const size = range.last - range.first + 1;
  const offset = (start ?? range.first + Math.floor(Math.random() * size)) - range.first;
  for (let step = 0; step < size; step++) {
    const port = range.first + ((offset + step) % size);
    if (taken.has(port)) continue;
    if (await canBind(port)) return port;
  }
  throw new ApiError(
    "PORT_RANGE_EXHAUSTED",
    `Every port of PLATFORM_DB_PORT_RANGE (${range.first}-${range.last}) is held by a database or in use on this host; ` +
      "delete databases or widen the range",
  );
}
