// The public proxy on a thread of its own (a Worker; its entry is src/proxy-worker.ts), so that
// nothing the rest of the platform does on the main thread holds up the requests in flight: a
// database write waiting for the disk, a large answer being built, a collection of the platform's
// much larger heap. The proxy's own heap is small, and so are its collections' pauses.
//
// The main thread keeps the routing table and the certificates; the proxy's thread keeps copies,
// changed by calls made here. A call is synchronous: it returns once the proxy's thread has made
// the change (the main thread waits on a shared counter, some 60 µs), so a route set when a
// release switches is served from the next request on, as when the proxy shared the main thread.
// Stopping is the one call that is not: it waits for the requests in flight.
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import type { ServedChange } from "../certificates/served";
import type { RouteChange } from "./routes";
import type { ProxyOptions, PublicProxy } from "./server";
import type { TrafficReport, TrafficSource } from "./traffic";

/** What the proxy's thread is started with, besides the copies of the table and the certificates. */
export interface ProxyThreadSettings extends Pick<ProxyOptions, "hostname" | "port" | "domain" | "config"> {
  /** PLATFORM_PROXY_TLS_PORT: where the HTTPS listener opens once a certificate exists. */
  tlsPort: number;
  /** The platform's database, read for the apps that have no route (./routes.ts, unrouted). */
  databaseFile: string;
}

/** The state the copies start from. */
export interface ProxyThreadState {
  routes: RouteChange[];
  certificates: ServedChange[];
}

/** A call from the main thread, answered by the proxy's thread. */
export type ProxyCall =
  | { kind: "start"; settings: ProxyThreadSettings; state: ProxyThreadState }
  | { kind: "route"; change: RouteChange }
  | { kind: "certificate"; change: ServedChange }
  | { kind: "challenge"; token: string; keyAuthorization: string | null }
  | { kind: "startTls" }
  | { kind: "traffic"; subdomain: string | null }
  | { kind: "inFlight"; host: string; port: number };

/** How the proxy's thread answers each call; start and startTls answer the port they listen on. */
export interface ProxyCallHandlers {
  start(settings: ProxyThreadSettings, state: ProxyThreadState): number;
  route(change: RouteChange): void;
  certificate(change: ServedChange): void;
  challenge(token: string, keyAuthorization: string | null): void;
  startTls(): number;
  traffic(subdomain: string | null): TrafficReport;
  inFlight(host: string, port: number): number;
  stop(force: boolean): Promise<void>;
}

type Reply = { ok: true; value: unknown } | { ok: false; error: string };
/** Main thread to proxy's thread: the first message hands over the reply channel. */
type Inbound = { kind: "channel"; replies: MessagePort; answered: Int32Array } | { kind: "call"; call: ProxyCall } | { kind: "stop"; force: boolean };
/** Proxy's thread to main thread, outside calls. */
type Outbound = { kind: "stopped" };

/** How long a call may take before the proxy's thread is taken for stuck. */
const CALL_TIMEOUT_MS = 10_000;
/** Starting includes loading the proxy's code. */
const START_TIMEOUT_MS = 30_000;

/** The main thread's side: the proxy as the rest of the platform sees it. */
export class ProxyThread implements PublicProxy, TrafficSource {
  readonly port: number;
  private readonly replies: MessagePort;
  /** Incremented by the proxy's thread after each reply it posts. */
  private readonly answered = new Int32Array(new SharedArrayBuffer(4));
  private stopping: Promise<void> | null = null;
  private stopped: (() => void) | null = null;

  /**
   * Starts the proxy's thread from `entry` (src/proxy-worker.ts) and returns once it listens.
   * A thread that ends while the platform runs ends the platform: nothing else would serve its apps.
   */
  constructor(
    private readonly worker: Worker,
    settings: ProxyThreadSettings,
    state: ProxyThreadState,
  ) {
    const channel = new MessageChannel();
    this.replies = channel.port1;
    worker.addEventListener("message", (event: MessageEvent<Outbound>) => {
      if (event.data.kind === "stopped") this.stopped?.();
    });
    worker.addEventListener("error", (event: ErrorEvent) => {
      console.error(`[proxy] the public proxy's thread failed: ${event.message}`);
      if (!this.stopping) process.exit(1);
    });
    worker.postMessage({ kind: "channel", replies: channel.port2, answered: this.answered } satisfies Inbound, [channel.port2]);
    this.port = this.call({ kind: "start", settings, state }, START_TIMEOUT_MS) as number;
  }

  route(change: RouteChange) {
    this.call({ kind: "route", change });
  }

  certificate(change: ServedChange) {
    this.call({ kind: "certificate", change });
  }

  challenge(token: string, keyAuthorization: string | null) {
    this.call({ kind: "challenge", token, keyAuthorization });
  }

  startTls(): number {
    return this.call({ kind: "startTls" }) as number;
  }

  report(subdomain: string | null): TrafficReport {
    return this.call({ kind: "traffic", subdomain }) as TrafficReport;
  }

  inFlight(host: string, port: number): number {
    return this.call({ kind: "inFlight", host, port }) as number;
  }

  /** As PublicProxy.stop; the thread ends once its connections are closed. */
  stop(force = false): Promise<void> {
    const done = new Promise<void>((resolve) => (this.stopped = resolve));
    this.worker.postMessage({ kind: "stop", force } satisfies Inbound);
    this.stopping = done.then(() => {
      if (force) this.worker.terminate();
    });
    return this.stopping;
  }

  /** Posts the call and waits for its reply; throws what the proxy's thread threw. */
  private call(call: ProxyCall, timeoutMs = CALL_TIMEOUT_MS): unknown {
    const seen = Atomics.load(this.answered, 0);
    this.worker.postMessage({ kind: "call", call } satisfies Inbound);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`the public proxy's thread did not answer a ${call.kind} call within ${timeoutMs} ms`);
      if (Atomics.load(this.answered, 0) === seen) Atomics.wait(this.answered, 0, seen, left);
      const received = receiveMessageOnPort(this.replies);
      if (!received) continue;
      const reply = received.message as Reply;
      if (!reply.ok) throw new Error(reply.error);
      return reply.value;
    }
  }
}

/** The proxy's thread's side: answers the calls of the ProxyThread that started it. */
export function answerProxyCalls(scope: Worker, handlers: ProxyCallHandlers) {
  let replies: MessagePort | null = null;
  let answered: Int32Array | null = null;
  scope.onmessage = (event: MessageEvent<Inbound>) => {
    const message = event.data;
    if (message.kind === "channel") {
      replies = message.replies;
      answered = message.answered;
      return;
    }
    if (message.kind === "stop") {
      void handlers.stop(message.force).then(() => scope.postMessage({ kind: "stopped" } satisfies Outbound));
      return;
    }
    let reply: Reply;
    try {
      reply = { ok: true, value: answer(handlers, message.call) };
    } catch (error) {
      reply = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    replies!.postMessage(reply);
    Atomics.add(answered!, 0, 1);
    Atomics.notify(answered!, 0);
  };
}

function answer(handlers: ProxyCallHandlers, call: ProxyCall): unknown {
  switch (call.kind) {
    case "start":
      return handlers.start(call.settings, call.state);
    case "route":
      return handlers.route(call.change);
    case "certificate":
      return handlers.certificate(call.change);
    case "challenge":
      return handlers.challenge(call.token, call.keyAuthorization);
    case "startTls":
      return handlers.startTls();
    case "traffic":
      return handlers.traffic(call.subdomain);
    case "inFlight":
      return handlers.inFlight(call.host, call.port);
  }
}
