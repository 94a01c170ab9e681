// Starts the real platform as a child process on a temp data dir and a free port, and talks to
// it over HTTP. Set PLATFORM_TEST_BINARY=./platform to run the suite against the compiled binary.
import { spawn, type Subprocess } from "bun";
import { afterAll } from "bun:test";
import { resolve } from "node:path";
import { tempDir } from "./temp";
import { responseCheckerFor } from "./openapi-check";

const ROOT = resolve(import.meta.dir, "../..");

/** Read when a process starts, so a script may choose the binary after importing this file. */
function platformCommand(): string[] {
  const binary = process.env.PLATFORM_TEST_BINARY;
  return binary ? [resolve(ROOT, binary)] : [process.execPath, resolve(ROOT, "src/main.ts")];
}

export interface CreatedKey {
  id: string;
  key: string;
  workspaceId: string;
}

export class TestServer {
  process: Subprocess<"ignore", "pipe", "pipe"> | null = null;
  baseUrl = "";
  /** The public proxy's port: apps answer there with Host `<subdomain>.localhost`. */
  proxyPort = 0;
  output = "";
  private stopping = false;

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
  ) {}

  static async start(env: Record<string, string> = {}, dataDir = tempDir()): Promise<TestServer> {
    const server = new TestServer(dataDir, env);
    await server.boot();
    return server;
  }

  get processEnv(): Record<string, string> {
    return {
      ...(process.env as Record<string, string>),
      PLATFORM_DATA_DIR: this.dataDir,
      PLATFORM_HOST: "127.0.0.1",
      PLATFORM_PORT: "0",
      PLATFORM_PROXY_PORT: "0",
      // Once a test uploads a certificate the HTTPS listener opens: on a port of its own.
      PLATFORM_PROXY_TLS_PORT: "0",
      PLATFORM_DOMAIN: "localhost",
      // Every stall of 20 ms or more is logged, for the event-loop-lag probe (./event-loop-lag.ts).
      PLATFORM_EVENT_LOOP_WARN_MS: "20",
      ...this.env,
    };
  }

  /** Starts (or restarts) the server process and waits until it answers. */
  async boot(): Promise<void> {
    const child = spawn([...platformCommand(), "serve"], { env: this.processEnv, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    this.process = child;
    let started = false;
    const port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${this.output}`)), 20_000);
      const collect = async (stream: ReadableStream<Uint8Array>) => {
        for await (const chunk of stream) {
          this.output += new TextDecoder().decode(chunk);
          const api = /platform \S+ listening on http:\/\/[^:]+:(\d+)/.exec(this.output);
          const proxy = /proxy listening on http:\/\/[^:]+:(\d+)/.exec(this.output);
          if (api && proxy) {
            clearTimeout(timer);
            this.proxyPort = Number(proxy[1]);
            resolvePort(Number(api[1]));
          }
        }
      };
      void collect(child.stdout);
      void collect(child.stderr);
      void child.exited.then((code) => {
        reject(new Error(`server exited with ${code}:\n${this.output}`));
        // A crash mid-test otherwise shows only as refused connections in the tests after it.
        if (started && this.process === child && !this.stopping) console.error(`[test server] exited unexpectedly with ${code}; its output:\n${this.output.slice(-20_000)}`);
      });
    });
    started = true;
    this.baseUrl = `http://127.0.0.1:${port}`;
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (!this.process) return;
    this.stopping = true;
    this.process.kill(signal);
    await this.process.exited;
    this.stopping = false;
    this.process = null;
    this.output = "";
  }

  /** Runs `platform keys create` against this server's data dir (works while it runs too). */
  async createKey(name = "test", workspace = "default"): Promise<CreatedKey> {
    const child = spawn([...platformCommand(), "keys", "create", "--name", name, "--workspace", workspace], {
      env: this.processEnv,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (code !== 0) throw new Error(`keys create failed (${code}): ${stderr}`);
    return JSON.parse(stdout);
  }

  /**
   * Throws when an answer is not what the OpenAPI document says it is (./openapi-check.ts), so the
   * test that received it fails. Every answer of `request` goes through here.
   */
  async assertDocumented(method: string, path: string, response: { status: number; headers: Headers; body: unknown }): Promise<void> {
    const problems = (await responseCheckerFor(this.baseUrl)).problems(method, path, response.status, response.headers.get("content-type"), response.body);
    if (problems.length > 0) throw new Error(`answer differs from the OpenAPI document:\n${problems.join("\n")}\nbody: ${JSON.stringify(response.body)?.slice(0, 2000)}`);
  }

  /** fetch() against the server with an optional API key; JSON bodies are encoded for you. */
  async request(
    method: string,
    path: string,
    options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; headers: Headers; body: any }> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    let body: BodyInit | undefined;
    if (options.body instanceof FormData || typeof options.body === "string") body = options.body;
    else if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    const response = await fetch(this.baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    const answer = { status: response.status, headers: response.headers, body: parsed };
    await this.assertDocumented(method, path, answer);
    return answer;
  }
}

/**
 * For a test file that starts a server per test: registers an afterAll that stops every server
 * started, and returns the function that starts one.
 */
export function serversStoppedAfterAll(): (env?: Record<string, string>) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((server) => server.stop())));
  return async (env = {}) => {
    const server = await TestServer.start(env);
    servers.push(server);
    return server;
  };
}
