// Request bodies are refused on their headers, before anything is read or authenticated: over
// 1 MiB (413) or without a Content-Length (411), on every route but the two streamed uploads; and
// on their nesting (400), in one cheap pass, before anything parses them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { TestServer } from "../helpers/server";
import { expectErrorEnvelope } from "../helpers/auth-matrix";
import { startLagProbe } from "../helpers/event-loop-lag";

const MiB = 1024 * 1024;

let server: TestServer;
beforeAll(async () => (server = await TestServer.start()));
afterAll(() => server.stop());

function residentMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

// `{"name":""}` is 11 bytes.
const jsonOfSize = (bytes: number) => JSON.stringify({ name: "x".repeat(bytes - 11) });

async function send(method: string, path: string, body: BodyInit, headers: Record<string, string> = {}) {
  const response = await fetch(server.baseUrl + path, { method, body, headers: { "content-type": "application/json", ...headers } });
  const answer = { status: response.status, headers: response.headers, body: await response.json().catch(() => null) };
  await server.assertDocumented(method, path, answer);
  return answer;
}

/** A body sent in chunks with no Content-Length (Transfer-Encoding: chunked). */
function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

describe("request bodies", () => {
  test("an anonymous 50 MB JSON body -> 413 at once, and the server's memory stays put", async () => {
    const pid = server.process!.pid;
    const before = residentMiB(pid);
    const started = performance.now();
    const response = await send("POST", "/api/api-keys/", jsonOfSize(50 * MiB));
    const seconds = (performance.now() - started) / 1000;
    expectErrorEnvelope(response, 413, "PAYLOAD_TOO_LARGE");
    expect(seconds).toBeLessThan(5);
    expect(residentMiB(pid) - before).toBeLessThan(50);
  });

  test("just over 1 MiB -> 413 on a public route too; 1 MiB is still read", async () => {
    expectErrorEnvelope(await send("POST", "/api/auth/login", jsonOfSize(MiB + 1)), 413, "PAYLOAD_TOO_LARGE");
    // Read and validated: the email of this body is not an email.
    expectErrorEnvelope(await send("POST", "/api/auth/login", JSON.stringify({ email: "x".repeat(MiB - 40), password: "password" })), 400, "VALIDATION_FAILED");
  });

  test("a body without Content-Length (chunked) -> 411 LENGTH_REQUIRED", async () => {
    const response = await send("POST", "/api/auth/login", chunked(JSON.stringify({ email: "a@example.com", password: "password" })));
    expectErrorEnvelope(response, 411, "LENGTH_REQUIRED");
    expect(response.body.error).toContain("Content-Length");
  });

  test("the two upload routes are left to their own streaming limit", async () => {
    for (const path of ["/api/apps/deploy", "/api/apps/inspect-env"]) {
      const large = await send("POST", path, "x".repeat(2 * MiB), { "content-type": "multipart/form-data; boundary=b" });
      expectErrorEnvelope(large, 401);
      const streamed = await send("POST", path, chunked("--b--"), { "content-type": "multipart/form-data; boundary=b" });
      expectErrorEnvelope(streamed, 401);
    }
  });

  test("three 150 KB bodies nesting 25,000 levels at once: 400 BODY_TOO_DEEP, the server stays responsive and logs nothing", async () => {
    const { key } = await server.createKey("nesting");
    const levels = 25_000;
    // `{"a":{"a":...1...}}`, six bytes a level: the unchanged server spent 4.5 s of its event loop on one.
    const body = `{"envVars":${'{"a":'.repeat(levels)}1${"}".repeat(levels)}}`;
    expect(body.length).toBeGreaterThan(150_000);
    const logged = server.output.length;
    const probe = startLagProbe(server);
    const answers = await Promise.all(
      [1, 2, 3].map(() => send("PUT", "/api/apps/app_nested/env", body, { authorization: `Bearer ${key}` })),
    );
    const maxStallMs = await probe.stop();
    const slowestProbeMs = Math.max(...probe.latencies);
    // Both numbers shown when it fails.
    expect({ maxStallMs, slowestProbeMs, responsive: maxStallMs < 100 && slowestProbeMs < 1_000 }).toEqual({ maxStallMs, slowestProbeMs, responsive: true });
    for (const answer of answers) expectErrorEnvelope(answer, 400, "BODY_TOO_DEEP");
    const log = server.output.slice(logged).replace(/^\[event-loop\].*\n/gm, "");
    expect(log).toBe("");
  });
});
