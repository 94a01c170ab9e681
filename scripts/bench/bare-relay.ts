// The least a proxy on Bun's TCP sockets can do, as a reference row for scripts/bench/proxy.ts:
// each request head is passed to the upstream unchanged over a kept-alive connection, and each
// answer back unchanged, framed by its Content-Length only. No parsing beyond that, no headers,
// no limits, no error handling: not a proxy anyone should run, only the ceiling of how fast one
// written in JavaScript on Bun can be on this machine.
//
//   BARE_RELAY_PORT=8080 BARE_RELAY_UPSTREAM=172.18.0.2:3000 bun scripts/bench/bare-relay.ts
import type { Socket } from "bun";

const [upstreamHost, upstreamPort] = (process.env.BARE_RELAY_UPSTREAM ?? "").split(":");
if (!upstreamHost || !upstreamPort) throw new Error("BARE_RELAY_UPSTREAM=host:port is required");

interface Client {
  pending: Buffer[];
  upstream: Socket<Upstream> | null;
}
interface Upstream {
  client: Socket<Client> | null;
  remaining: number;
  headDone: boolean;
}

const idle: Socket<Upstream>[] = [];
const HEAD_END = Buffer.from("\r\n\r\n");
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i;

function send(client: Socket<Client>, head: Buffer) {
  let upstream = idle.pop();
  // The app closes connections idle for a while (between the bench's runs).
  while (upstream && upstream.readyState !== 1) upstream = idle.pop();
  if (upstream) {
    upstream.data.client = client;
    client.data.upstream = upstream;
    upstream.write(head);
    return;
  }
  void Bun.connect<Upstream>({
    hostname: upstreamHost!,
    port: Number(upstreamPort),
    data: { client, remaining: 0, headDone: false },
    socket: {
      data(socket, chunk: Buffer) {
        const state = socket.data;
        const target = state.client;
        if (!target) return;
        if (!state.headDone) {
          const end = chunk.indexOf(HEAD_END);
          state.headDone = true;
          state.remaining = Number(CONTENT_LENGTH.exec(chunk.toString("latin1", 0, end))?.[1] ?? 0) - (chunk.byteLength - end - 4);
        } else state.remaining -= chunk.byteLength;
        target.write(chunk);
        if (state.remaining > 0) return;
        state.client = null;
        state.headDone = false;
        target.data.upstream = null;
        idle.push(socket);
        const next = target.data.pending.shift();
        if (next) send(target, next);
      },
      close(socket) {
        const index = idle.indexOf(socket);
        if (index >= 0) idle.splice(index, 1);
      },
    },
  }).then((socket) => {
    client.data.upstream = socket;
    socket.write(head);
  });
}

Bun.listen<Client>({
  hostname: "127.0.0.1",
  port: Number(process.env.BARE_RELAY_PORT ?? 0),
  socket: {
    open(socket) {
      socket.data = { pending: [], upstream: null };
    },
    data(socket, chunk: Buffer) {
      // wrk sends one request at a time per connection: a chunk is a whole head.
      if (socket.data.upstream) socket.data.pending.push(chunk);
      else send(socket, chunk);
    },
  },
});
process.on("SIGTERM", () => process.exit(0));
