// The public proxy as a client on a real network sees it: 50 MB bodies streamed both ways with the
// proxy's memory flat, server-sent events flushed as they come, compressed bodies and redirects
// passed unchanged, slow answers and quiet streams not cut; and its defences: the header, idle and
// upstream timeouts, the open-connection limit per client address, and requests whose framing is
// ambiguous (request smuggling, RFC 9112) refused before they reach the app.
//
// One node:http app serves every route, deployed once on each of two servers: one with the
// default timeouts (a 12 s answer must pass there) and one with 2 s timeouts and a limit of three
// connections per address. Requests to the second come from their own loopback address per test
// (127.0.0.x is another client), so that one test's connections never count against another's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { TestServer } from "../../helpers/server";
import { appZip, deleteAllApps, deployZip, viaProxy, waitForStatus } from "../../helpers/apps";
import { RawConnection, rawRequest, requestHead, type RawResponse } from "../../helpers/raw-http";

// The bytes uploaded and downloaded: 800 blocks of 64 KiB (50 MiB), block i a rotation of 0..255
// starting at 13·i with i in its first four bytes, so a lost, repeated or reordered block changes
// the hash. The app makes the same blocks one at a time (never the whole body in memory).
const BLOCK_SIZE = 64 * 1024;
const BLOCKS = 800;
const TOTAL_BYTES = BLOCK_SIZE * BLOCKS;
const PATTERN = Buffer.from(Array.from({ length: BLOCK_SIZE + 256 }, (_, index) => index & 255));

function patternBlock(index: number): Buffer {
  const offset = (index * 13) & 255;
  const block = Buffer.from(PATTERN.subarray(offset, offset + BLOCK_SIZE));
  block.writeUInt32BE(index, 0);
  return block;
}

const PATTERN_SHA256 = (() => {
  const hash = createHash("sha256");
  for (let index = 0; index < BLOCKS; index++) hash.update(patternBlock(index));
  return hash.digest("hex");
})();

const GZIPPED_TEXT = "compressed by the app, ".repeat(4000);

const STREAMS_APP = appZip({
  "package.json": JSON.stringify({ name: "streams", main: "server.js" }),
  "server.js": `
const http = require("http");
const crypto = require("crypto");
const zlib = require("zlib");

const BLOCK_SIZE = ${BLOCK_SIZE};
const PATTERN = Buffer.alloc(BLOCK_SIZE + 256);
for (let index = 0; index < PATTERN.length; index++) PATTERN[index] = index & 255;
function patternBlock(index) {
  const offset = (index * 13) & 255;
  const block = Buffer.from(PATTERN.subarray(offset, offset + BLOCK_SIZE));
  block.writeUInt32BE(index, 0);
  return block;
}
const GZIPPED = zlib.gzipSync(Buffer.from(${JSON.stringify(GZIPPED_TEXT)}));

// Every request the app was handed ("METHOD /url"), and every request its parser refused.
const seen = [];
let parseErrors = 0;

// The lenient parser: a request the proxy should have refused is taken in here, and counted.
const server = http.createServer({ insecureHTTPParser: true }, (req, res) => {
  const url = new URL(req.url, "http://app");
  if (url.pathname === "/count") {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ count: seen.length, seen, parseErrors }));
    return;
  }
  seen.push(req.method + " " + req.url);
  switch (url.pathname) {
    case "/upload": {
      const hash = crypto.createHash("sha256");
      let bytes = 0;
      req.on("data", (piece) => { bytes += piece.length; hash.update(piece); });
      // Not reading at first: the proxy has to hold the client back, not take the body in.
      const pauseMs = Number(url.searchParams.get("pauseMs") ?? 0);
      if (pauseMs) { req.pause(); setTimeout(() => req.resume(), pauseMs); }
      req.on("end", () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ bytes, sha256: hash.digest("hex") }));
      });
      return;
    }
    case "/download": {
      const blocks = Number(url.searchParams.get("blocks"));
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(blocks * BLOCK_SIZE) });
      let index = 0;
      const pump = () => {
        while (index < blocks) if (!res.write(patternBlock(index++))) return void res.once("drain", pump);
        res.end();
      };
      pump();
      return;
    }
    case "/sse": {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      let sent = 0;
      const send = () => {
        res.write("data: " + sent++ + "\\n\\n");
        if (sent === 7) { clearInterval(timer); res.end(); }
      };
      const timer = setInterval(send, 300);
      send();
      res.on("close", () => clearInterval(timer));
      return;
    }
    case "/sse-quiet": {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write("data: first\\n\\n");
      setTimeout(() => res.end("data: second\\n\\n"), Number(url.searchParams.get("ms")));
      return;
    }
    case "/slow":
      setTimeout(() => res.end("slow done"), Number(url.searchParams.get("ms")));
      return;
    case "/gzip":
      res.writeHead(200, {
        "content-type": "text/plain; charset=utf-8",
        "content-encoding": "gzip",
        "content-length": String(GZIPPED.length),
        "x-body-sha256": crypto.createHash("sha256").update(GZIPPED).digest("hex"),
      });
      res.end(GZIPPED);
      return;
    case "/redirect":
      res.writeHead(302, { location: "/elsewhere" });
      res.end();
      return;
    case "/hang":
      return;
    case "/stall-body":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("part");
      return;
    default:
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ method: req.method, url: req.url }));
  }
});
server.on("clientError", (error, socket) => {
  if (String(error.code).startsWith("HPE_")) parseErrors++;
  socket.destroy();
});
server.listen(process.env.PORT, () => console.log("streams up"));
`,
});

interface Deployed {
  server: TestServer;
  key: string;
  subdomain: string;
  /** The Host header that names the app. */
  host: string;
}

async function startWithApp(env: Record<string, string>): Promise<Deployed> {
  const server = await TestServer.start(env);
  const key = (await server.createKey("streaming")).key;
  try {
    const deployed = await deployZip(server, key, { name: "streams", runtime: "node", memoryMB: "128", autoRestart: "false" }, STREAMS_APP);
    if (deployed.status !== 202) throw new Error(`deploy refused: ${JSON.stringify(deployed.body)}`);
    const app = await waitForStatus(server, key, deployed.body.app.id, ["running", "failed"]);
    if (app.status !== "running") throw new Error(`app did not start: ${JSON.stringify(app)}\n${server.output.slice(-3000)}`);
    return { server, key, subdomain: app.subdomain, host: `${app.subdomain}.localhost` };
  } catch (error) {
    // afterAll never learns of this server: it is cleaned up here.
    await deleteAllApps(server, key);
    await server.stop();
    throw error;
  }
}

/** Default timeouts: what a slow app or a quiet stream gets in production. */
let roomy: Deployed;
/** 2 s header, idle and upstream timeouts; three open connections per client address. */
let tight: Deployed;

beforeAll(async () => {
  const started = await Promise.allSettled([
    startWithApp({}),
    startWithApp({
      PLATFORM_PROXY_HEADER_TIMEOUT_SECONDS: "2",
      PLATFORM_PROXY_IDLE_TIMEOUT_SECONDS: "2",
      PLATFORM_PROXY_UPSTREAM_TIMEOUT_SECONDS: "2",
      PLATFORM_PROXY_IP_MAX_CONNECTIONS: "3",
    }),
  ]);
  if (started[0].status === "fulfilled") roomy = started[0].value;
  if (started[1].status === "fulfilled") tight = started[1].value;
  for (const result of started) if (result.status === "rejected") throw result.reason;
}, 120_000);

afterAll(async () => {
  await Promise.all(
    [roomy, tight].filter(Boolean).map(async ({ server, key }) => {
      await deleteAllApps(server, key);
      await server.stop();
    }),
  );
}, 60_000);

/** The platform process's resident memory, from the kernel. */
function rssBytes(server: TestServer): number {
  const status = readFileSync(`/proc/${server.process!.pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Samples the platform's RSS every 20 ms from now on; `peakGrowthMB` is the most it grew so far. */
function watchRss(server: TestServer) {
  const before = rssBytes(server);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(server))), 20);
  return {
    peakGrowthMB() {
      peak = Math.max(peak, rssBytes(server));
      return Math.round(((peak - before) / 2 ** 20) * 10) / 10;
    },
    stop: () => clearInterval(sampler),
  };
}

/**
 * Uploads `blocks` pattern blocks to /upload as fast as the proxy takes them, framed by
 * Content-Length or chunked, the app not reading for its first `appPauseMs`; returns what the app counted.
 */
async function upload(deployed: Deployed, framing: "content-length" | "chunked", blocks: number, appPauseMs = 0): Promise<{ bytes: number; sha256: string }> {
  const connection = await RawConnection.open(deployed.server.proxyPort);
  try {
    const framingHeader: Record<string, string> =
      framing === "chunked" ? { "Transfer-Encoding": "chunked" } : { "Content-Length": String(blocks * BLOCK_SIZE) };
    await connection.write(requestHead("POST", `/upload?pauseMs=${appPauseMs}`, deployed.host, { "Content-Type": "application/octet-stream", Connection: "close", ...framingHeader }));
    const chunkHead = Buffer.from(`${BLOCK_SIZE.toString(16)}\r\n`);
    for (let index = 0; index < blocks; index++) {
      const block = patternBlock(index);
      await connection.write(framing === "chunked" ? Buffer.concat([chunkHead, block, Buffer.from("\r\n")]) : block);
    }
    if (framing === "chunked") await connection.write("0\r\n\r\n");
    const answer = await connection.readResponse({ timeoutMs: 60_000 });
    if (answer.status !== 200) throw new Error(`upload answered ${answer.status}: ${answer.text().slice(0, 300)}`);
    return answer.json();
  } finally {
    connection.close();
  }
}

/** Downloads `blocks` pattern blocks, reading slowly (250 ms pause after each piece) for the first `slowMs`, then as fast as they come. */
async function download(deployed: Deployed, blocks: number, slowMs: number) {
  const connection = await RawConnection.open(deployed.server.proxyPort);
  try {
    await connection.write(requestHead("GET", `/download?blocks=${blocks}`, deployed.host, { Connection: "close" }));
    const hash = createHash("sha256");
    let bytes = 0;
    const slowUntil = performance.now() + slowMs;
    const answer = await connection.readResponse({
      timeoutMs: 60_000,
      onBody(piece) {
        hash.update(piece);
        bytes += piece.length;
        if (performance.now() < slowUntil) {
          connection.pause();
          setTimeout(() => connection.resume(), 250);
        }
      },
    });
    return { status: answer.status, bytes, sha256: hash.digest("hex") };
  } finally {
    connection.close();
  }
}

/** What the app was handed so far, read through the proxy. */
async function appCount(deployed: Deployed): Promise<{ count: number; seen: string[]; parseErrors: number }> {
  const answer = await rawRequest(deployed.server.proxyPort, deployed.host, "/count");
  expect(answer.status).toBe(200);
  return answer.json();
}

const closesConnection = (answer: RawResponse) => /(^|,)\s*close\s*(,|$)/i.test(answer.headers.get("connection") ?? "");

describe("streaming through the proxy (default timeouts)", () => {
  // Memory is measured while one side is not reading and the other could send the whole 50 MB in
  // a fraction of a second: a proxy without backpressure takes it all in then. Over a whole fast
  // transfer RSS mostly shows garbage not yet collected (20-45 MB peaks, up and down between runs,
  // with a proxy that does hold the sender back), which says nothing about buffering.
  test("a 50 MB upload, with Content-Length and chunked, reaches the app whole while the proxy's memory stays flat", async () => {
    // Warm up first, so that what is measured is the streaming, not the first use of a code path.
    for (const framing of ["content-length", "chunked"] as const) expect((await upload(roomy, framing, 16)).bytes).toBe(16 * BLOCK_SIZE);
    for (const framing of ["content-length", "chunked"] as const) {
      const rss = watchRss(roomy.server);
      try {
        const uploading = upload(roomy, framing, BLOCKS, 2_000);
        await Bun.sleep(1_800);
        const whileAppPausedMB = rss.peakGrowthMB();
        const result = await uploading;
        expect({ framing, ...result, whileAppPausedMB, flat: whileAppPausedMB < 30 }).toEqual({
          framing,
          bytes: TOTAL_BYTES,
          sha256: PATTERN_SHA256,
          whileAppPausedMB,
          flat: true,
        });
      } finally {
        rss.stop();
      }
    }
  }, 90_000);

  test("a 50 MB download read slowly, then fast, arrives whole while the proxy's memory stays flat", async () => {
    expect((await download(roomy, 16, 0)).bytes).toBe(16 * BLOCK_SIZE);
    const rss = watchRss(roomy.server);
    try {
      const downloading = download(roomy, BLOCKS, 2_000);
      await Bun.sleep(1_900);
      const whileClientSlowMB = rss.peakGrowthMB();
      const result = await downloading;
      expect({ ...result, whileClientSlowMB, flat: whileClientSlowMB < 30 }).toEqual({
        status: 200,
        bytes: TOTAL_BYTES,
        sha256: PATTERN_SHA256,
        whileClientSlowMB,
        flat: true,
      });
    } finally {
      rss.stop();
    }
  }, 90_000);

  test("server-sent events reach the client as they are sent, not when the stream ends", async () => {
    const sentAt = performance.now();
    const response = await viaProxy(roomy.server, roomy.subdomain, "/sse");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("text/event-stream");
    const arrivals: { at: number; text: string }[] = [];
    const decoder = new TextDecoder();
    for await (const piece of response.body!) arrivals.push({ at: performance.now() - sentAt, text: decoder.decode(piece, { stream: true }) });
    const endedAt = performance.now() - sentAt;
    const text = arrivals.map((arrival) => arrival.text).join("");
    expect(text).toBe([0, 1, 2, 3, 4, 5, 6].map((n) => `data: ${n}\n\n`).join(""));
    // The app sends one event every 300 ms, for 1.8 s.
    const firstEventAt = arrivals.find((arrival) => arrival.text.includes("data: 0"))!.at;
    expect({ firstEventAt, endedAt, firstWellBeforeEnd: firstEventAt < 1000 && endedAt - firstEventAt > 1200 }).toEqual({
      firstEventAt,
      endedAt,
      firstWellBeforeEnd: true,
    });
  });

  test("a gzipped answer arrives with its exact compressed bytes and Content-Encoding; a redirect is returned, not followed", async () => {
    const gzipped = await rawRequest(roomy.server.proxyPort, roomy.host, "/gzip", { headers: { "Accept-Encoding": "gzip" } });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers.get("content-encoding")).toBe("gzip");
    expect(createHash("sha256").update(gzipped.body).digest("hex")).toBe(gzipped.headers.get("x-body-sha256")!);
    expect(gunzipSync(gzipped.body).toString()).toBe(GZIPPED_TEXT);

    const redirect = await rawRequest(roomy.server.proxyPort, roomy.host, "/redirect");
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("/elsewhere");
    expect((await appCount(roomy)).seen).not.toContain("GET /elsewhere");
  });

  test("an answer that takes 12 s arrives, and a stream quiet for 12 s is not cut", async () => {
    // Longer than Bun.serve's default idleTimeout (10 s), well under the upstream timeout (300 s).
    const slow = rawRequest(roomy.server.proxyPort, roomy.host, "/slow?ms=12000", { timeoutMs: 20_000 }).then(
      (answer) => ({ status: answer.status, body: answer.text() }),
      (error: Error) => ({ error: error.message }),
    );
    const quiet = rawRequest(roomy.server.proxyPort, roomy.host, "/sse-quiet?ms=12000", { timeoutMs: 20_000 }).then(
      (answer) => ({ status: answer.status, body: answer.text() }),
      (error: Error) => ({ error: error.message }),
    );
    expect(await slow).toEqual({ status: 200, body: "slow done" });
    expect(await quiet).toEqual({ status: 200, body: "data: first\n\ndata: second\n\n" });
  }, 30_000);
});

describe("request smuggling defence (default settings)", () => {
  test("requests with ambiguous framing get 400 BAD_REQUEST with Connection: close, and the app is handed none of them", async () => {
    const host = roomy.host;
    const request = (method: string, path: string, lines: string[], body = "") =>
      [`${method} ${path} HTTP/1.1`, `Host: ${host}`, "Accept: application/json", ...lines].join("\r\n") + "\r\n\r\n" + body;
    // A whole second request hidden in a body that one reading of the headers frames differently.
    const hiddenAfterEmptyChunk = `0\r\n\r\nGET /smuggled-cl-te HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const hiddenInChunk = `GET /smuggled-te-cl HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const chunkedHidden = `${hiddenInChunk.length.toString(16)}\r\n${hiddenInChunk}\r\n0\r\n\r\n`;
    const cases: Record<string, string> = {
      "Content-Length, then Transfer-Encoding, a request after the empty chunk": request(
        "POST",
        "/smuggle-cl-te",
        [`Content-Length: ${hiddenAfterEmptyChunk.length}`, "Transfer-Encoding: chunked"],
        hiddenAfterEmptyChunk,
      ),
      "Transfer-Encoding, then Content-Length, a request inside the chunk": request(
        "POST",
        "/smuggle-te-cl",
        ["Transfer-Encoding: chunked", "Content-Length: 4"],
        chunkedHidden,
      ),
      "two different Content-Length fields": request("POST", "/smuggle-two-lengths", ["Content-Length: 5", "Content-Length: 6"], "hello!"),
      "a Content-Length list": request("POST", "/smuggle-length-list", ["Content-Length: 5, 6"], "hello!"),
      "Transfer-Encoding gzip, chunked": request("POST", "/smuggle-te-gzip", ["Transfer-Encoding: gzip, chunked"], "0\r\n\r\n"),
      "Transfer-Encoding xchunked": request("POST", "/smuggle-te-xchunked", ["Transfer-Encoding: xchunked"], "0\r\n\r\n"),
      "Transfer-Encoding chunked twice": request("POST", "/smuggle-te-twice", ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "0\r\n\r\n"),
      "obsolete line folding with a space": request("GET", "/smuggle-fold-space", ["X-Folded: first", " folded"]),
      "obsolete line folding with a tab": request("GET", "/smuggle-fold-tab", ["X-Folded: first", "\tfolded"]),
      "a space before the colon": request("GET", "/smuggle-space-colon", ["X-Spaced : yes"]),
      "Transfer-Encoding with a space before the colon": request("POST", "/smuggle-te-space", ["Transfer-Encoding : chunked"], "0\r\n\r\n"),
      "Content-Length abc": request("POST", "/smuggle-length-abc", ["Content-Length: abc"], "hello"),
      "Content-Length -1": request("POST", "/smuggle-length-negative", ["Content-Length: -1"], "hello"),
      "Content-Length +5": request("POST", "/smuggle-length-plus", ["Content-Length: +5"], "hello"),
    };

    const before = await appCount(roomy);
    const outcomes: Record<string, unknown> = {};
    for (const [name, bytes] of Object.entries(cases)) {
      const connection = await RawConnection.open(roomy.server.proxyPort);
      try {
        await connection.write(bytes);
        const answer = await connection.readResponse({ timeoutMs: 5_000 });
        // The code is in the JSON answer or on the HTML page: a head refused as malformed may be
        // answered before its Accept is read, so either form will do.
        const code = answer.text().includes("BAD_REQUEST") ? "BAD_REQUEST" : `none in: ${answer.text().slice(0, 120)}`;
        outcomes[name] = { status: answer.status, code, connectionClose: closesConnection(answer), closed: (await connection.closedWithin(2_000)) !== null };
      } catch (error) {
        outcomes[name] = { error: (error as Error).message };
      } finally {
        connection.close();
      }
    }
    const after = await appCount(roomy);
    const refused = { status: 400, code: "BAD_REQUEST", connectionClose: true, closed: true };
    expect({ outcomes, handedToApp: after.seen.slice(before.count), refusedByAppParser: after.parseErrors - before.parseErrors }).toEqual({
      outcomes: Object.fromEntries(Object.keys(cases).map((name) => [name, refused])),
      handedToApp: [],
      refusedByAppParser: 0,
    });
  });

  test("a valid chunked body, and bodies holding what looks like a request, reach the app whole as one request each", async () => {
    const host = roomy.host;
    const before = await appCount(roomy);
    const connection = await RawConnection.open(roomy.server.proxyPort);
    try {
      // Chunked, with a request's text split across two chunks.
      const inChunks = `GET /smuggled-in-chunks HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
      const [first, second] = [inChunks.slice(0, 10), inChunks.slice(10)];
      await connection.write(
        requestHead("POST", "/upload", host, { "Transfer-Encoding": "chunked" }) +
          `${first.length.toString(16)}\r\n${first}\r\n${second.length.toString(16)}\r\n${second}\r\n0\r\n\r\n`,
      );
      const chunked = await connection.readResponse({ timeoutMs: 5_000 });
      expect(chunked.status).toBe(200);
      expect(chunked.json()).toEqual({ bytes: inChunks.length, sha256: createHash("sha256").update(inChunks).digest("hex") });

      // Framed by Content-Length, on the same connection: an empty chunk and a request as plain bytes.
      const inLength = `0\r\n\r\nGET /smuggled-in-length HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
      await connection.write(requestHead("POST", "/upload", host, {}, inLength.length) + inLength);
      const byLength = await connection.readResponse({ timeoutMs: 5_000 });
      expect(byLength.status).toBe(200);
      expect(byLength.json()).toEqual({ bytes: inLength.length, sha256: createHash("sha256").update(inLength).digest("hex") });
    } finally {
      connection.close();
    }
    const after = await appCount(roomy);
    expect(after.seen.slice(before.count)).toEqual(["POST /upload", "POST /upload"]);
    expect(after.parseErrors).toBe(before.parseErrors);
  });
});

describe("timeouts and connection limits (2 s timeouts, 3 connections per address)", () => {
  test("an app that never answers gets 504 APP_TIMED_OUT after the upstream timeout, as JSON or HTML", async () => {
    const started = performance.now();
    const asked = (headers: Record<string, string>) =>
      rawRequest(tight.server.proxyPort, tight.host, "/hang", { localAddress: "127.0.0.6", headers, timeoutMs: 8_000 }).then((answer) => ({
        answer,
        elapsedMs: performance.now() - started,
      }));
    const [json, html] = await Promise.all([asked({ Accept: "application/json" }), asked({})]);
    expect(json.answer.status).toBe(504);
    expect(json.answer.json()).toMatchObject({ success: false, code: "APP_TIMED_OUT" });
    expect({ elapsedMs: json.elapsedMs, inWindow: json.elapsedMs > 1_500 && json.elapsedMs < 4_500 }).toEqual({ elapsedMs: json.elapsedMs, inWindow: true });
    expect(html.answer.status).toBe(504);
    expect(html.answer.headers.get("content-type")).toStartWith("text/html");
  });

  test("an answer whose body stops coming is cut after the upstream timeout, and the client sees it unfinished", async () => {
    const connection = await RawConnection.open(tight.server.proxyPort, "127.0.0.6");
    try {
      const started = performance.now();
      await connection.write(requestHead("GET", "/stall-body", tight.host));
      let received = "";
      const outcome = await connection.readResponse({ timeoutMs: 8_000, onBody: (piece) => (received += piece.toString()) }).then(
        () => "complete",
        (error: Error) => (error.message.startsWith("connection closed") ? "cut" : error.message),
      );
      const elapsedMs = performance.now() - started;
      expect({ outcome, received }).toEqual({ outcome: "cut", received: "part" });
      expect({ elapsedMs, inWindow: elapsedMs > 1_500 && elapsedMs < 4_500 }).toEqual({ elapsedMs, inWindow: true });
    } finally {
      connection.close();
    }
  });

  test("a slowloris client is answered 408 and cut off at the header timeout, a silent one is closed, and others are served meanwhile", async () => {
    const started = performance.now();
    const [slow, silent] = await Promise.all([RawConnection.open(tight.server.proxyPort, "127.0.0.7"), RawConnection.open(tight.server.proxyPort, "127.0.0.7")]);
    const silentClosed = silent.closedWithin(6_000).then((ms) => (ms === null ? null : performance.now() - started));
    await slow.write(`GET / HTTP/1.1\r\nHost: ${tight.host}\r\nX-Slow: `);
    // One more header byte every 500 ms: always sending, never done.
    const drip = setInterval(() => slow.write("a").catch(() => {}), 500);
    try {
      await Bun.sleep(800);
      const meanwhile = await rawRequest(tight.server.proxyPort, tight.host, "/", { localAddress: "127.0.0.17", timeoutMs: 3_000 });
      expect(meanwhile.status).toBe(200);

      const answer = await slow.readResponse({ timeoutMs: 6_000 });
      const answeredMs = performance.now() - started;
      expect(answer.status).toBe(408);
      expect(closesConnection(answer)).toBe(true);
      expect(await slow.closedWithin(1_000)).not.toBeNull();
      expect({ answeredMs, inWindow: answeredMs > 1_500 && answeredMs < 4_500 }).toEqual({ answeredMs, inWindow: true });

      const silentMs = await silentClosed;
      expect({ silentMs, inWindow: silentMs !== null && silentMs > 1_500 && silentMs < 4_500 }).toEqual({ silentMs, inWindow: true });
    } finally {
      clearInterval(drip);
      slow.close();
      silent.close();
    }
  }, 30_000);

  test("a keep-alive connection left idle after its answer is closed after the idle timeout", async () => {
    const connection = await RawConnection.open(tight.server.proxyPort, "127.0.0.8");
    try {
      await connection.write(requestHead("GET", "/", tight.host));
      const answer = await connection.readResponse({ timeoutMs: 3_000 });
      expect(answer.status).toBe(200);
      expect(closesConnection(answer)).toBe(false);
      const idleMs = await connection.closedWithin(5_000);
      expect({ idleMs, inWindow: idleMs !== null && idleMs > 1_500 && idleMs < 4_000 }).toEqual({ idleMs, inWindow: true });
    } finally {
      connection.close();
    }
  });

  test("one connection over the per-address limit gets 429 TOO_MANY_CONNECTIONS and is closed; other addresses are served, and a freed slot is usable", async () => {
    const { proxyPort } = tight.server;
    const held = await Promise.all([0, 1, 2].map(() => RawConnection.open(proxyPort, "127.0.0.3")));
    const fourth = await RawConnection.open(proxyPort, "127.0.0.3");
    try {
      // Each of the three is served and kept open (well within the 2 s idle timeout of this test).
      for (const connection of held) {
        await connection.write(requestHead("GET", "/", tight.host));
        expect((await connection.readResponse({ timeoutMs: 3_000 })).status).toBe(200);
      }
      // The proxy may answer the fourth as soon as it connects, before the request is written.
      await fourth.write(requestHead("GET", "/", tight.host, { Accept: "application/json" })).catch(() => {});
      const refused = await fourth.readResponse({ timeoutMs: 3_000 });
      expect(refused.status).toBe(429);
      expect(refused.text()).toContain("TOO_MANY_CONNECTIONS");
      expect(closesConnection(refused)).toBe(true);
      expect(await fourth.closedWithin(1_000)).not.toBeNull();

      expect((await rawRequest(proxyPort, tight.host, "/", { localAddress: "127.0.0.4", timeoutMs: 3_000 })).status).toBe(200);
      expect(held.map((connection) => connection.isClosed)).toEqual([false, false, false]);

      held[0]!.close();
      await held[0]!.closed;
      await Bun.sleep(200);
      expect((await rawRequest(proxyPort, tight.host, "/", { localAddress: "127.0.0.3", timeoutMs: 3_000 })).status).toBe(200);
    } finally {
      for (const connection of [...held, fourth]) connection.close();
    }
  });
});
