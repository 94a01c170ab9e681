// The proxy's writes (src/proxy/socket-writer.ts) on real loopback sockets: heads built in the one
// shared buffer (larger than it, with body bytes joined), and plain bytes, written to a peer that
// stops reading. What the socket does not take waits, copied out of the shared buffer, and arrives
// whole and in order once the peer reads again.
import { afterEach, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { outgoingHead, SocketWriter } from "../../../src/proxy/socket-writer";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

test("heads and bytes written past what the socket takes arrive whole and in order after the drain", async () => {
  const received: Buffer[] = [];
  let receivedBytes = 0;
  let peer: Socket<undefined> | null = null;
  const listener: TCPSocketListener<undefined> = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        peer = socket;
        socket.pause(); // reads nothing until told: the sender's writes fill up
      },
      data(_socket, chunk) {
        received.push(Buffer.from(chunk));
        receivedBytes += chunk.byteLength;
      },
    },
  });
  cleanups.push(() => listener.stop(true));

  let drained: (() => void) | null = null;
  const sender = await Bun.connect<SocketWriter>({
    hostname: "127.0.0.1",
    port: listener.port,
    socket: {
      open(socket) {
        socket.data = new SocketWriter(socket);
      },
      drain(socket) {
        if (socket.data.flush()) drained?.();
      },
      data() {},
    },
  });
  cleanups.push(() => sender.terminate());
  const writer = sender.data;

  // Pieces until the socket stops taking them, and as many again after: heads of 40 KiB (past the
  // shared buffer's 32 KiB) with 10 KiB of body joined, and 64 KiB runs of plain bytes.
  const expected: Buffer[] = [];
  let blockedAt = -1;
  for (let piece = 0; blockedAt < 0 || piece < blockedAt * 2; piece++) {
    const body = Buffer.alloc(10 * 1024, 97 + (piece % 26));
    const headText = `HTTP/1.1 200 OK\r\nx-piece: ${piece}\r\nx-filler: ${"f".repeat(40 * 1024)}\r\n\r\n`;
    writer.writeHead(outgoingHead.begin().text(headText).bytes(body, 0, body.byteLength));
    expected.push(Buffer.from(headText, "latin1"), body);
    const bytes = Buffer.alloc(64 * 1024, 48 + (piece % 10));
    writer.write(bytes);
    expected.push(bytes);
    if (blockedAt < 0 && writer.blocked) blockedAt = piece + 1;
    expect(piece).toBeLessThan(10_000);
  }
  expect(writer.blocked).toBe(true);

  const all = Buffer.concat(expected);
  const flushed = new Promise<void>((resolve) => (drained = resolve));
  peer!.resume();
  await flushed;
  for (let wait = 0; receivedBytes < all.byteLength && wait < 500; wait++) await Bun.sleep(10);
  expect(receivedBytes).toBe(all.byteLength);
  expect(Buffer.concat(received).equals(all)).toBe(true);
});
