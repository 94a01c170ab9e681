// A TCP listener on the host's loopback only, standing in for what a tenant must never reach (a
// host service, a cloud metadata endpoint): it counts every connection, whatever protocol comes,
// and answers any HTTP request with a secret, so a test can check that the secret went nowhere.
// Given a token realm, it answers as an image registry that sends its clients there for a token
// (401 with `WWW-Authenticate: Bearer realm=...`).
import type { TCPSocketListener } from "bun";

export interface LoopbackWitness {
  port: number;
  /** What it serves: shows up wherever a fetch from it lands. */
  secret: string;
  /** Connections opened to it so far. */
  connections(): number;
  stop(): void;
}

export function loopbackWitness(options: { tokenRealm?: string } = {}): LoopbackWitness {
  const secret = `witness-secret-${crypto.randomUUID()}`;
  let connections = 0;
  const statusAndHeaders = options.tokenRealm === undefined ? "200 OK" : `401 Unauthorized\r\nWWW-Authenticate: Bearer realm="${options.tokenRealm}",service="registry"`;
  const response = `HTTP/1.1 ${statusAndHeaders}\r\nContent-Type: text/plain\r\nContent-Length: ${secret.length}\r\nConnection: close\r\n\r\n${secret}`;
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
