// A TCP listener on the host's loopback only, standing in for what a tenant must never reach (a
// host service, a cloud metadata endpoint): it counts every connection, whatever protocol comes,
// and answers any HTTP request with a secret, so a test can check that the secret went nowhere.
import type { TCPSocketListener } from "bun";

export interface LoopbackWitness {
  port: number;
  /** What it serves: shows up wherever a fetch from it lands. */
  secret: string;
  /** Connections opened to it so far. */
  connections(): number;
  stop(): void;
}

export function loopbackWitness(): LoopbackWitness {
  const secret = `witness-secret-${crypto.randomUUID()}`;
  let connections = 0;
  const response = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${secret.length}\r\nConnection: close\r\n\r\n${secret}`;
  const listener: TCPSocketListener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open() {
        connections++;
      },
      data(socket) {
        socket.write(response);
        socket.end();
      },
    },
  });
  return { port: listener.port, secret, connections: () => connections, stop: () => listener.stop(true) };
}
