// One probe of an app container: GET the health check's path on its workspace-network address and
// port (Host: the app's host), or, without a path, a TCP connect. Written over a plain socket so
// that what is read is bounded in bytes (the status line, at most PROBE_READ_BYTES) and in time
// (`timeoutSeconds`); the status only decides healthy or not, nothing is trusted beyond it.
import { createConnection } from "node:net";
import type { HealthProbe } from "./settings";

/** Bytes of the answer read at most: the status line must be within them. */
const PROBE_READ_BYTES = 4096;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})[ \r]/;

export interface ProbeTarget {
  host: string;
  port: number;
  /** null: a TCP connect. */
  path: string | null;
  /** The Host header: the app's public host (or its name when it has none). */
  hostHeader: string;
  timeoutMs: number;
}

export function probe(target: ProbeTarget): Promise<HealthProbe> {
  const started = performance.now();
  const at = Date.now();
  return new Promise((resolve) => {
    const socket = createConnection({ host: target.host, port: target.port });
    let received = "";
    let settled = false;
    const done = (httpStatus: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const passed = error === null && (target.path === null || (httpStatus !== null && httpStatus >= 200 && httpStatus < 400));
      resolve({ passed, at, httpStatus, error, latencyMs: Math.round((performance.now() - started) * 10) / 10 });
    };
    const timer = setTimeout(() => done(null, `timed out after ${target.timeoutMs / 1000} s`), target.timeoutMs);
    socket.once("connect", () => {
      if (target.path === null) return done(null, null);
      socket.write(`GET ${target.path} HTTP/1.1\r\nHost: ${target.hostHeader}\r\nUser-Agent: platform-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n`);
    });
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1", 0, Math.min(chunk.length, PROBE_READ_BYTES - received.length));
      const lineEnd = received.indexOf("\n");
      if (lineEnd < 0 && received.length < PROBE_READ_BYTES) return;
      const status = STATUS_LINE.exec(received);
      if (status) done(Number(status[1]), null);
      else done(null, "the answer is not HTTP/1.x");
    });
    socket.once("end", () => done(null, received ? "the answer is not HTTP/1.x" : "closed without an answer"));
    socket.once("error", (error: NodeJS.ErrnoException) => done(null, error.code === "ECONNREFUSED" ? "connection refused" : (error.code ?? error.message)));
  });
}
