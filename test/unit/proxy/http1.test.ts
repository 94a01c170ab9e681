// The proxy's HTTP/1.1 reading (src/proxy/http1.ts): request and response heads, and where a body
// ends (src/proxy/body.ts). Every framing two parsers could disagree on is refused (request and response smuggling).
import { describe, expect, test } from "bun:test";
import { BodyTracker, ChunkedBody } from "../../../src/proxy/body";
import {
  fieldCount,
  fieldName,
  fieldValue,
  HeadError,
  indexOfHeadEnd,
  parseRequestHead,
  parseResponseHead,
  responseFraming,
  type MessageHead,
  type ResponseHead,
} from "../../../src/proxy/http1";

const headBytes = (lines: string[]) => Buffer.from(lines.join("\r\n"), "latin1");
const request = (...lines: string[]) => parseRequestHead(headBytes(lines), 0, headBytes(lines).byteLength);
const response = (...lines: string[]) => parseResponseHead(headBytes(lines), 0, headBytes(lines).byteLength);
/** A head's header fields as [name, value] pairs, in order. */
const fieldsOf = (head: MessageHead) => Array.from({ length: fieldCount(head) }, (_, index) => [fieldName(head, index), fieldValue(head, index)]);
const bytes = (text: string) => Buffer.from(text, "latin1");

/** The HeadError status a head is refused with (fails the test when it is accepted). */
function refusal(parse: () => unknown): number {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(HeadError);
    return (error as HeadError).status;
  }
  throw new Error("the head was accepted");
}

describe("request heads", () => {
  test("method, target, host, headers as sent, Connection tokens and keep-alive", () => {
    const head = request("GET /cart?x=1 HTTP/1.1", "Host: shop.apps.test", "X-Name:   spaced value  ", "Connection: keep-alive, X-Hop", "X-Hop: 1");
    expect(head.method).toBe("GET");
    expect(head.target).toBe("/cart?x=1");
    expect(head.host).toBe("shop.apps.test");
    expect(head.minorVersion).toBe(1);
    expect(fieldsOf(head)).toEqual([
      ["Host", "shop.apps.test"],
      ["X-Name", "spaced value"],
      ["Connection", "keep-alive, X-Hop"],
      ["X-Hop", "1"],
    ]);
    expect(head.connection).toEqual(["keep-alive", "x-hop"]);
    expect(head.framing).toEqual({ kind: "none" });
    expect(head.keepAlive).toBe(true);
  });

  test("keep-alive: HTTP/1.1 unless Connection: close, HTTP/1.0 only with Connection: keep-alive", () => {
    expect(request("GET / HTTP/1.1", "Host: a", "Connection: Close").keepAlive).toBe(false);
    expect(request("GET / HTTP/1.1", "Host: a", "Connection: x", "Connection: close").keepAlive).toBe(false);
    const old = request("GET / HTTP/1.0");
    expect(old.minorVersion).toBe(0);
    expect(old.host).toBeNull();
    expect(old.keepAlive).toBe(false);
    expect(request("GET / HTTP/1.0", "Connection: Keep-Alive").keepAlive).toBe(true);
  });

  test("body framing: Content-Length, chunked (any case), or none", () => {
    expect(request("POST / HTTP/1.1", "Host: a", "Content-Length: 5").framing).toEqual({ kind: "length", length: 5 });
    expect(request("POST / HTTP/1.1", "Host: a", "Content-Length: 0").framing).toEqual({ kind: "none" });
    expect(request("POST / HTTP/1.1", "Host: a", "Content-Length: 000000000000012").framing).toEqual({ kind: "length", length: 12 });
    const chunked = request("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: Chunked");
    expect(chunked.framing).toEqual({ kind: "chunked" });
    expect(chunked.chunked).toBe(true);
    expect(chunked.contentLength).toBeNull();
  });

  test("an absolute-form target: its authority is the host, the target is sent in origin form", () => {
    const head = request("GET http://Shop.apps.test:8080/a/b?c=1 HTTP/1.1", "Host: other.apps.test");
    expect(head.host).toBe("Shop.apps.test:8080");
    expect(head.target).toBe("/a/b?c=1");
    expect(request("GET http://shop.apps.test HTTP/1.1", "Host: x").target).toBe("/");
    expect(request("GET HTTPS://shop.apps.test?q=1 HTTP/1.1", "Host: x").target).toBe("/?q=1");
  });

  test("`*` for OPTIONS", () => {
    expect(request("OPTIONS * HTTP/1.1", "Host: a").target).toBe("*");
  });

  test("tabs and obs-text are allowed in a value; 200 header fields are", () => {
    expect(fieldsOf(request("GET / HTTP/1.1", "Host: a", "X-A: one\ttwo \xe9")).at(1)).toEqual(["X-A", "one\ttwo \xe9"]);
    const many = Array.from({ length: 199 }, (_, index) => `X-${index}: ${index}`);
    expect(fieldCount(request("GET / HTTP/1.1", "Host: a", ...many))).toBe(200);
    expect(refusal(() => request("GET / HTTP/1.1", "Host: a", ...many, "X-Last: 1"))).toBe(400);
  });

  const refused: [string, string[], number][] = [
    ["Content-Length with Transfer-Encoding", ["POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Transfer-Encoding: chunked"], 400],
    ["Transfer-Encoding before Content-Length", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Content-Length: 5"], 400],
    ["a Content-Length given twice, even the same", ["POST / HTTP/1.1", "Host: a", "Content-Length: 5", "Content-Length: 5"], 400],
    ["a Content-Length given twice, different", ["POST / HTTP/1.1", "Host: a", "Content-Length: 5", "content-length: 50"], 400],
    ["a Content-Length list", ["POST / HTTP/1.1", "Host: a", "Content-Length: 5, 5"], 400],
    ["a signed Content-Length", ["POST / HTTP/1.1", "Host: a", "Content-Length: +5"], 400],
    ["a negative Content-Length", ["POST / HTTP/1.1", "Host: a", "Content-Length: -1"], 400],
    ["a hex Content-Length", ["POST / HTTP/1.1", "Host: a", "Content-Length: 0x10"], 400],
    ["a Content-Length with a suffix", ["POST / HTTP/1.1", "Host: a", "Content-Length: 5a"], 400],
    ["an empty Content-Length", ["POST / HTTP/1.1", "Host: a", "Content-Length: "], 400],
    ["a Content-Length of 16 digits", ["POST / HTTP/1.1", "Host: a", "Content-Length: 1234567890123456"], 400],
    ["Transfer-Encoding gzip, chunked", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: gzip, chunked"], 400],
    ["Transfer-Encoding chunked, chunked", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked, chunked"], 400],
    ["Transfer-Encoding identity", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: identity"], 400],
    ["Transfer-Encoding given twice", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], 400],
    ["Transfer-Encoding in HTTP/1.0", ["POST / HTTP/1.0", "Transfer-Encoding: chunked"], 400],
    ["obsolete line folding", ["GET / HTTP/1.1", "Host: a", "X-A: 1", " folded"], 400],
    ["obsolete line folding with a tab", ["GET / HTTP/1.1", "Host: a", "X-A: 1", "\tfolded"], 400],
    ["a space before a colon", ["GET / HTTP/1.1", "Host : a"], 400],
    ["a tab before a colon", ["POST / HTTP/1.1", "Host: a", "Content-Length\t: 5"], 400],
    ["a NUL in a value", ["GET / HTTP/1.1", "Host: a", "X-A: a\x00b"], 400],
    ["a bare CR in a value", ["GET / HTTP/1.1", "Host: a", "X-A: a\rb"], 400],
    ["a bare LF in a value", ["GET / HTTP/1.1", "Host: a", "X-A: a\nTransfer-Encoding: chunked"], 400],
    ["DEL in a value", ["GET / HTTP/1.1", "Host: a", "X-A: a\x7f"], 400],
    ["a vertical tab around Transfer-Encoding (only spaces and tabs are trimmed)", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: \x0bchunked"], 400],
    ["a no-break space around Transfer-Encoding", ["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked\xa0"], 400],
    ["a header line without a colon", ["GET / HTTP/1.1", "Host: a", "X-A"], 400],
    ["a header without a name", ["GET / HTTP/1.1", "Host: a", ": a"], 400],
    ["HTTP/1.1 without Host", ["GET / HTTP/1.1", "X-A: 1"], 400],
    ["Host given twice", ["GET / HTTP/1.1", "Host: a.apps.test", "host: b.apps.test"], 400],
    ["Host given twice in HTTP/1.0", ["GET / HTTP/1.0", "Host: a", "HOST: a"], 400],
    ["an absolute-form target of another scheme", ["GET ftp://shop.apps.test/ HTTP/1.1", "Host: a"], 400],
    ["an absolute-form target without an authority", ["GET http:///x HTTP/1.1", "Host: a"], 400],
    ["a relative target", ["GET x/y HTTP/1.1", "Host: a"], 400],
    ["`*` for GET", ["GET * HTTP/1.1", "Host: a"], 400],
    ["a space in the target", ["GET /a b HTTP/1.1", "Host: a"], 400],
    ["two spaces after the method", ["GET  / HTTP/1.1", "Host: a"], 400],
    ["a control character in the target", ["GET /a\x01 HTTP/1.1", "Host: a"], 400],
    ["obs-text in the target", ["GET /\xe9 HTTP/1.1", "Host: a"], 400],
    ["an invalid method", ["G(ET / HTTP/1.1", "Host: a"], 400],
    ["no version", ["GET /", "Host: a"], 400],
    ["a lowercase version", ["GET / http/1.1", "Host: a"], 400],
    ["HTTP/2.0", ["GET / HTTP/2.0", "Host: a"], 505],
    ["HTTP/1.2", ["GET / HTTP/1.2", "Host: a"], 505],
    ["HTTP/0.9", ["GET / HTTP/0.9", "Host: a"], 505],
    ["CONNECT", ["CONNECT shop.apps.test:443 HTTP/1.1", "Host: shop.apps.test:443"], 501],
  ];
  for (const [what, lines, status] of refused) {
    test(`refused with ${status}: ${what}`, () => {
      expect(refusal(() => request(...lines))).toBe(status);
    });
  }
});

describe("response heads", () => {
  test("status, reason, version and framing fields", () => {
    const head = response("HTTP/1.1 200 OK", "Content-Type: text/plain", "Content-Length: 5", "Connection: close");
    expect(head.status).toBe(200);
    expect(head.reason).toBe("OK");
    expect(head.minorVersion).toBe(1);
    expect(head.contentLength).toBe(5);
    expect(head.connection).toEqual(["close"]);
    expect(response("HTTP/1.0 404 Not Found").minorVersion).toBe(0);
    expect(response("HTTP/1.1 204").reason).toBe("");
    expect(response("HTTP/1.1 299 ").reason).toBe("");
    expect(response("HTTP/1.1 200 Fine \xe9").reason).toBe("Fine \xe9");
    expect(response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked").chunked).toBe(true);
  });

  const refused: [string, string[]][] = [
    ["Content-Length with Transfer-Encoding", ["HTTP/1.1 200 OK", "Content-Length: 5", "Transfer-Encoding: chunked"]],
    ["a Content-Length given twice, even the same", ["HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 2"]],
    ["a Content-Length given twice, different", ["HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 40"]],
    ["a Content-Length list", ["HTTP/1.1 200 OK", "Content-Length: 2, 40"]],
    ["a non-numeric Content-Length", ["HTTP/1.1 200 OK", "Content-Length: +2"]],
    ["a transfer coding other than chunked", ["HTTP/1.1 200 OK", "Transfer-Encoding: gzip, chunked"]],
    ["Transfer-Encoding in HTTP/1.0", ["HTTP/1.0 200 OK", "Transfer-Encoding: chunked"]],
    ["obsolete line folding", ["HTTP/1.1 200 OK", "X-A: 1", " folded"]],
    ["a space before a colon", ["HTTP/1.1 200 OK", "Content-Length : 2"]],
    ["a control character in a value", ["HTTP/1.1 200 OK", "X-A: \x01"]],
    ["a four-digit status", ["HTTP/1.1 2000 OK"]],
    ["a status below 100", ["HTTP/1.1 099 Low"]],
    ["HTTP/2", ["HTTP/2 200"]],
    ["a control character in the reason", ["HTTP/1.1 200 O\x01K"]],
    ["no status line", ["Content-Length: 2"]],
  ];
  for (const [what, lines] of refused) {
    test(`refused with 502: ${what}`, () => {
      expect(refusal(() => response(...lines))).toBe(502);
    });
  }

  test("the framing of a response depends on the request's method and the status", () => {
    const head = (status: number, ...lines: string[]): ResponseHead => response(`HTTP/1.1 ${status} X`, ...lines);
    expect(responseFraming("HEAD", head(200, "Content-Length: 10"))).toEqual({ kind: "none" });
    expect(responseFraming("HEAD", head(200, "Transfer-Encoding: chunked"))).toEqual({ kind: "none" });
    expect(responseFraming("GET", head(204, "Content-Length: 10"))).toEqual({ kind: "none" });
    expect(responseFraming("GET", head(304, "Content-Length: 10"))).toEqual({ kind: "none" });
    expect(responseFraming("GET", head(103))).toEqual({ kind: "none" });
    expect(responseFraming("GET", head(200, "Transfer-Encoding: chunked"))).toEqual({ kind: "chunked" });
    expect(responseFraming("GET", head(200, "Content-Length: 10"))).toEqual({ kind: "length", length: 10 });
    expect(responseFraming("GET", head(200, "Content-Length: 0"))).toEqual({ kind: "none" });
    expect(responseFraming("GET", head(200))).toEqual({ kind: "close" });
  });
});

test("the end of a head: the index of its CRLF CRLF", () => {
  expect(indexOfHeadEnd(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"))).toBe(23);
  expect(indexOfHeadEnd(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r"))).toBe(-1);
  expect(indexOfHeadEnd(bytes("GET / HTTP/1.1\n\nHost: a\r\n"))).toBe(-1);
  expect(indexOfHeadEnd(bytes("\r\n\r\n\r\n\r\n"), 1)).toBe(2);
});

describe("chunked bodies", () => {
  const BODY = "4;ext=1\r\nWiki\r\n5 ; name=\"a;b\"\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\nX-Other: two\r\n\r\n";

  test("the end is found, with extensions and trailers; bytes after it are not taken", () => {
    const chunked = new ChunkedBody();
    const data = bytes(`${BODY}GET /next HTTP/1.1\r\n`);
    expect(chunked.feed(data)).toBe(BODY.length);
    expect(chunked.done).toBe(true);
  });

  test("split byte by byte, the end is found in the last byte only", () => {
    const chunked = new ChunkedBody();
    for (let index = 0; index < BODY.length - 1; index++) {
      expect(chunked.feed(bytes(BODY[index]!))).toBe(-1);
      expect(chunked.done).toBe(false);
    }
    expect(chunked.feed(bytes(BODY.at(-1)!))).toBe(1);
    expect(chunked.done).toBe(true);
  });

  test("split at every point in two pieces, with an offset", () => {
    for (let split = 1; split < BODY.length; split++) {
      const chunked = new ChunkedBody();
      expect(chunked.feed(bytes(`xx${BODY.slice(0, split)}`), 2)).toBe(-1);
      expect(chunked.feed(bytes(`${BODY.slice(split)}rest`))).toBe(BODY.length - split);
    }
  });

  test("a body without trailers; uppercase hex sizes", () => {
    const chunked = new ChunkedBody();
    const body = `A\r\n${"x".repeat(10)}\r\n0\r\n\r\n`;
    expect(chunked.feed(bytes(body))).toBe(body.length);
  });

  const malformed: [string, string, RegExp][] = [
    ["a size that is not hex", "zz\r\n", /invalid chunk size/],
    ["an empty size", "\r\n", /invalid chunk size/],
    ["a negative size", "-1\r\n", /invalid chunk size/],
    ["a size of 13 hex digits", "1000000000000\r\n", /invalid chunk size/],
    ["a size line ended by a bare LF", "4\nWiki\r\n0\r\n\r\n", /CRLF/],
    ["chunk data longer than its size", "2\r\nabc\r\n0\r\n\r\n", /longer than its size/],
    ["chunk data not followed by CRLF", "2\r\nabXY", /longer than its size/],
    ["a control character in an extension", "2;a=\x01\r\n", /invalid chunk size/],
    ["a folded trailer", "0\r\nX-A: 1\r\n folded\r\n\r\n", /malformed trailer/],
    ["a trailer without a colon", "0\r\nnocolon\r\n\r\n", /malformed trailer/],
  ];
  for (const [what, body, message] of malformed) {
    test(`refused: ${what}`, () => {
      expect(() => {
        const chunked = new ChunkedBody();
        for (const piece of [body, "\r\n"]) chunked.feed(bytes(piece));
      }).toThrow(message);
    });
  }

  test("a chunk line over 4 KiB is refused, in one piece or over several", () => {
    const long = `1;${"e".repeat(5000)}\r\n`;
    expect(() => new ChunkedBody().feed(bytes(long))).toThrow(/too long/);
    const chunked = new ChunkedBody();
    expect(() => {
      for (let at = 0; at < long.length; at += 100) chunked.feed(bytes(long.slice(at, at + 100)));
    }).toThrow(/too long/);
    const trailer = new ChunkedBody();
    expect(() => trailer.feed(bytes(`0\r\nX-Long: ${"t".repeat(5000)}\r\n\r\n`))).toThrow(/too long/);
    // Just under the limit is fine.
    expect(new ChunkedBody().feed(bytes(`1;${"e".repeat(4000)}\r\nx\r\n0\r\n\r\n`))).toBe(4002 + 2 + 3 + 5);
  });
});

describe("body tracking", () => {
  test("no body: done at once, nothing taken", () => {
    const tracker = new BodyTracker({ kind: "none" });
    expect(tracker.done).toBe(true);
    expect(tracker.feed(bytes("GET / HTTP/1.1"), 3)).toBe(3);
    expect(tracker.bytes).toBe(0);
  });

  test("a Content-Length body over several pieces, bytes after it not counted", () => {
    const tracker = new BodyTracker({ kind: "length", length: 10 });
    expect(tracker.feed(bytes("1234"))).toBe(-1);
    expect(tracker.done).toBe(false);
    expect(tracker.feed(bytes("..567890NEXT"), 2)).toBe(8);
    expect(tracker.done).toBe(true);
    expect(tracker.bytes).toBe(10);
    expect(tracker.feed(bytes("more"))).toBe(0);
    expect(tracker.bytes).toBe(10);
  });

  test("a chunked body: framing bytes counted", () => {
    const tracker = new BodyTracker({ kind: "chunked" });
    expect(tracker.feed(bytes("2\r\nok\r\n"))).toBe(-1);
    expect(tracker.feed(bytes("0\r\n\r\nNEXT"))).toBe(5);
    expect(tracker.done).toBe(true);
    expect(tracker.bytes).toBe(12);
  });

  test("a body framed by the close never ends", () => {
    const tracker = new BodyTracker({ kind: "close" });
    expect(tracker.feed(bytes("abc"))).toBe(-1);
    expect(tracker.feed(bytes("0\r\n\r\n"))).toBe(-1);
    expect(tracker.done).toBe(false);
    expect(tracker.bytes).toBe(8);
  });

  test("malformed chunked framing throws", () => {
    expect(() => new BodyTracker({ kind: "chunked" }).feed(bytes("x\r\n"))).toThrow();
  });
});
