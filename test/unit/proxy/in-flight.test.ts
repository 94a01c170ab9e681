// The proxy counts the requests in flight to an upstream when asked (a release drains its old
// container by it, src/apps/health/drain.ts): held requests count until answered, another
// upstream's do not, an answered or abandoned one no longer does, nor does an open WebSocket; a
// preempted release stops waiting at once.
import { afterEach, expect, test } from "bun:test";
import { RawConnection, requestHead } from "../../helpers/raw-http";
import { ProxyHarness, hostOf, until } from "../../helpers/proxy-harness";
import { drain } from "../../../src/apps/health/drain";

const harness = new ProxyHarness();
afterEach(() => harness.cleanup());

const OK = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

test("requests in flight to an upstream are counted until answered; a drain waits for them", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const slow = harness.rawApp(async (_head, connection) => {
    await held;
    connection.write(OK);
  });
  const quick = harness.rawApp((_head, connection) => connection.write(OK));
  const proxy = harness.proxy();
  proxy.route("slow", slow.upstream);
  proxy.route("quick", quick.upstream);

  const answers = [proxy.fetch("slow", "/a"), proxy.fetch("slow", "/b")].map((response) => response.then((answer) => answer.status));
  await until(() => proxy.inFlight(slow.upstream) === 2, "two requests in flight");
  expect(await (await proxy.fetch("quick")).text()).toBe("ok");
  expect(proxy.inFlight(quick.upstream)).toBe(0);

  // The route moves (as at a release's switch): the requests already sent are still counted.
  proxy.route("slow", quick.upstream);
  const drained = drain((host, port) => proxy.inFlight({ host, port }), slow.upstream, 5_000);
  await Bun.sleep(100);
  release();
  expect(await drained).toBe(0);
  expect(await Promise.all(answers)).toEqual([200, 200]);
  expect(proxy.inFlight(slow.upstream)).toBe(0);
});

/** A request through the proxy to an app that never answers, in flight. */
async function requestNeverAnswered() {
  const stuck = harness.rawApp(() => new Promise(() => {}));
  const proxy = harness.proxy();
  proxy.route("stuck", stuck.upstream);
  const connection = await RawConnection.open(proxy.port);
  harness.onCleanup(() => connection.close());
  await connection.write(requestHead("GET", "/", hostOf("stuck")));
  await until(() => proxy.inFlight(stuck.upstream) === 1, "the request in flight");
  return { stuck, proxy, connection };
}

test("a drain gives up after its limit, saying how many were left", async () => {
  const { stuck, proxy, connection } = await requestNeverAnswered();
  const started = performance.now();
  expect(await drain((host, port) => proxy.inFlight({ host, port }), stuck.upstream, 300)).toBe(1);
  expect(performance.now() - started).toBeLessThan(1_000);
  connection.close();
  await until(() => proxy.inFlight(stuck.upstream) === 0, "the abandoned request to stop counting");
});

test("an open WebSocket is no request in flight: a drain does not wait for it", async () => {
  const app = harness.app((request, server) => (server.upgrade(request) ? undefined : new Response("not a websocket", { status: 400 })), {
    websocket: { open: (socket: import("bun").ServerWebSocket<unknown>) => void socket.send("hello"), message() {} },
  } as never);
  const proxy = harness.proxy();
  proxy.route("chat", app.upstream);
  const client = new WebSocket(`ws://127.0.0.1:${proxy.port}/`, { headers: { host: hostOf("chat") } } as never);
  harness.onCleanup(() => client.close());
  await new Promise((resolve, reject) => {
    client.onmessage = resolve;
    client.onerror = () => reject(new Error("the WebSocket failed"));
  });

  expect(proxy.inFlight(app.upstream)).toBe(0);
  const started = performance.now();
  expect(await drain((host, port) => proxy.inFlight({ host, port }), app.upstream, 5_000)).toBe(0);
  expect(performance.now() - started).toBeLessThan(500);
  expect(client.readyState).toBe(WebSocket.OPEN);
});

test("a drain ends at once when its release is preempted (a stop or delete queued behind it)", async () => {
  const { stuck, proxy } = await requestNeverAnswered();
  const preempted = new AbortController();
  const started = performance.now();
  const drained = drain((host, port) => proxy.inFlight({ host, port }), stuck.upstream, 30_000, preempted.signal);
  await Bun.sleep(100);
  preempted.abort();
  expect(await drained).toBe(1);
  expect(performance.now() - started).toBeLessThan(1_000);
});
