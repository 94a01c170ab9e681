// A second, independent Docker engine on its own socket and data root, so a test can stop an
// engine under a running platform (and start it again) without touching the engine that every
// other test uses. It gets a bridge of its own: started with `--bridge=none`, dockerd deletes
// the host's docker0, which would break the main engine.
import { mkdirSync } from "node:fs";
import { tempDir } from "./temp";

export class SecondEngine {
  readonly root = tempDir("platform-engine-");
  readonly socket = `${this.root}/docker.sock`;
  readonly bridge = `pt${process.pid % 100000}`;
  private process: ReturnType<typeof Bun.spawn> | null = null;

  get host(): string {
    return `unix://${this.socket}`;
  }

  async start(): Promise<void> {
    for (const dir of ["data", "exec"]) mkdirSync(`${this.root}/${dir}`, { recursive: true });
    await ip("link", "add", "name", this.bridge, "type", "bridge").catch(() => {}); // kept across restarts
    await ip("link", "set", this.bridge, "up");
    this.process = Bun.spawn(
      [
        "dockerd",
        `--data-root=${this.root}/data`,
        `--exec-root=${this.root}/exec`,
        `--pidfile=${this.root}/docker.pid`,
        `--host=${this.host}`,
        `--bridge=${this.bridge}`,
        "--iptables=false",
        "--ip-masq=false",
      ],
      { stdout: "ignore", stderr: Bun.file(`${this.root}/dockerd.log`) },
    );
    for (let attempt = 0; attempt < 100; attempt++) {
      const probe = Bun.spawn(["docker", "-H", this.host, "version"], { stdout: "ignore", stderr: "ignore" });
      if ((await probe.exited) === 0) return;
      await Bun.sleep(200);
    }
    throw new Error(`second dockerd did not start; see ${this.root}/dockerd.log`);
  }

  async stop(): Promise<void> {
    if (!this.process) return;
    this.process.kill("SIGTERM");
    await this.process.exited;
    this.process = null;
  }

  /** Stops the engine for good and removes its bridge. */
  async dispose(): Promise<void> {
    await this.stop();
    await ip("link", "delete", this.bridge).catch(() => {});
  }
}

async function ip(...args: string[]): Promise<void> {
  const child = Bun.spawn(["ip", ...args], { stdout: "ignore", stderr: "pipe" });
  if ((await child.exited) !== 0) throw new Error(`ip ${args.join(" ")}: ${await new Response(child.stderr).text()}`);
}
