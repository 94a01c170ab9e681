// Waits until a freshly started container accepts TCP on its port, giving up when it exits or
// when time runs out. Connecting to the container's own address (not the published port) matters:
// Docker's userland proxy accepts on published ports even when nothing listens behind them.
import { createConnection } from "node:net";

export function acceptsTcp(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export async function waitUntilListening(options: {
  host: string;
  port: number;
  timeoutMs: number;
  /** Checked between attempts: a container that exited will never listen. */
  stillRunning: () => Promise<boolean>;
}): Promise<"listening" | "exited" | "timeout"> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (await acceptsTcp(options.host, options.port)) return "listening";
    if (!(await options.stillRunning())) return "exited";
    await Bun.sleep(150);
  }
  return "timeout";
}
