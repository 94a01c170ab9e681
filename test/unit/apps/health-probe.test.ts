// One probe of a health check against loopback servers made here: what passes, what fails and why,
// the Host header sent, and that an endless or silent answer is cut off by bytes and by time.
import { afterEach, expect, test } from "bun:test";
import type { TCPSocketListener } from "bun";
import { probe } from "../../../src/apps/health/probe";

const listeners: TCPSocketListener<undefined>[] = [];
afterEach(() => {
  for (const listener of listeners.splice(0)) listener.stop(true);
});

/** A TCP server that answers each connection's first bytes with `answer` (null: says nothing). Records the requests. */
function server(answer: string | null, requests: string[] = []) {
  const listener = Bun.listen<undefined>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(socket, chunk) {
        requests.push(Buffer.from(chunk).toString("latin1"));
        if (answer !== null) socket.write(answer);
      },
    },
  });
  listeners.push(listener);
  return listener.port;
}

const target = (port: number, path: string | null = "/health", timeoutMs = 1000) => ({ host: "127.0.0.1", port, path, hostHeader: "shop.apps.test", timeoutMs });

test("2xx and 3xx pass; other statuses fail with the status; the request names the path and the app's host", async () => {
  const requests: string[] = [];
  const passed = await probe(target(server("HTTP/1.1 204 No Content\r\n\r\n", requests)));
  expect(passed).toMatchObject({ passed: true, httpStatus: 204, error: null });
  expect(requests[0]).toStartWith("GET /health HTTP/1.1\r\nHost: shop.apps.test\r\n");
  expect(requests[0]).toContain("Connection: close\r\n");
  expect(await probe(target(server("HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n")))).toMatchObject({ passed: true, httpStatus: 302 });
  expect(await probe(target(server("HTTP/1.0 503 Service Unavailable\r\n\r\n")))).toMatchObject({ passed: false, httpStatus: 503, error: null });
});

test("no answer, a refused connection, and an answer that is not HTTP fail with the reason", async () => {
  const silent = await probe(target(server(null), "/health", 300));
  expect(silent).toMatchObject({ passed: false, httpStatus: null, error: "timed out after 0.3 s" });
  expect(silent.latencyMs).toBeGreaterThanOrEqual(290);
  const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const closedPort = closed.port;
  closed.stop(true);
  expect(await probe(target(closedPort))).toMatchObject({ passed: false, error: "connection refused" });
  expect(await probe(target(server("SSH-2.0-OpenSSH\r\n")))).toMatchObject({ passed: false, error: "the answer is not HTTP/1.x" });
});

test("an endless answer is read no further than its bound: the status line decides", async () => {
  expect(await probe(target(server(`HTTP/1.1 200 ${"x".repeat(100_000)}`)))).toMatchObject({ passed: true, httpStatus: 200 });
  expect(await probe(target(server("x".repeat(100_000))))).toMatchObject({ passed: false, error: "the answer is not HTTP/1.x" });
});

test("without a path the check is a TCP connect", async () => {
  const requests: string[] = [];
  expect(await probe(target(server(null, requests), null))).toMatchObject({ passed: true, httpStatus: null, error: null });
  expect(requests).toEqual([]);
});
