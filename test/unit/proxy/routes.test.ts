// Which app a Host header names, and the headers the proxy passes on.
import { expect, test } from "bun:test";
import { subdomainOf } from "../../../src/proxy/routes";
import { requestIdOf, upstreamRequestHeaders, withoutHopByHop } from "../../../src/proxy/forwarding";
import { proxyErrorResponse } from "../../../src/proxy/pages";

test("case, port and a trailing dot do not matter; other names are no app", () => {
  for (const host of ["shop.apps.example.com", "SHOP.Apps.Example.COM", "shop.apps.example.com:8080", "shop.apps.example.com.", "shop.apps.example.com.:80"]) {
    expect(subdomainOf(host, "apps.example.com")).toBe("shop");
  }
  for (const host of [null, "", "apps.example.com", "a.shop.apps.example.com", "shop.example.com", "[::1]:80", "evilapps.example.com"]) {
    expect(subdomainOf(host, "apps.example.com")).toBeNull();
  }
});

test("hop-by-hop headers go, with every header Connection names", () => {
  const headers = withoutHopByHop(new Headers({ connection: "close, X-Secret-Hop", "x-secret-hop": "1", "keep-alive": "timeout=5", te: "trailers", accept: "*/*" }));
  expect([...headers.keys()]).toEqual(["accept"]);
});

const source = (peerAddress: string, clientAddress = peerAddress) => ({ peerAddress, clientAddress, host: "shop.localhost:8080", https: false });

test("a client's X-Forwarded-*, X-Real-IP and Forwarded are replaced unless its peer is a trusted proxy", () => {
  const request = new Request("http://shop.localhost:8080/", {
    headers: { "x-forwarded-for": "6.6.6.6", "x-real-ip": "6.6.6.6", forwarded: "for=6.6.6.6", "x-forwarded-port": "1", "x-request-id": "abc-1" },
  });
  const untrusted = upstreamRequestHeaders(request, source("127.0.0.5"), false, 80, requestIdOf(request));
  expect(Object.fromEntries(untrusted)).toMatchObject({
    "x-forwarded-for": "127.0.0.5",
    "x-real-ip": "127.0.0.5",
    "x-forwarded-host": "shop.localhost:8080",
    "x-forwarded-proto": "http",
    "x-forwarded-port": "8080",
    "x-request-id": "abc-1",
  });
  expect(untrusted.has("forwarded")).toBe(false);
  const trusted = upstreamRequestHeaders(request, source("127.0.0.5", "6.6.6.6"), true, 80, "id");
  expect(trusted.get("x-forwarded-for")).toBe("6.6.6.6, 127.0.0.5");
  expect(trusted.get("x-real-ip")).toBe("6.6.6.6");
  expect(trusted.get("x-forwarded-port")).toBe("1");
});

test("a request id is kept when tame, else a new one is made", () => {
  expect(requestIdOf(new Request("http://x/", { headers: { "x-request-id": "req_123:abc" } }))).toBe("req_123:abc");
  const made = requestIdOf(new Request("http://x/", { headers: { "x-request-id": "bad id\twith spaces" } }));
  expect(made).toMatch(/^[0-9a-f-]{36}$/);
});

test("the proxy's own answers: HTML by default, JSON when asked", async () => {
  const html = proxyErrorResponse(404, "APP_NOT_FOUND", "No app <here>.", "text/html,application/json");
  expect(html.headers.get("content-type")).toContain("text/html");
  expect(await html.text()).toContain("No app &#60;here&#62;.");
  const json = proxyErrorResponse(503, "APP_UNAVAILABLE", "Not running.", "application/json", { "retry-after": "30" });
  expect(json.headers.get("retry-after")).toBe("30");
  expect(await json.json()).toEqual({ success: false, error: "Not running.", code: "APP_UNAVAILABLE" });
});
