// Which app a Host header names, and the proxy's own answers. The headers the proxy passes on are
// tested in forwarding.test.ts.
import { expect, test } from "bun:test";
import { API_ROUTE, ProxyRoutes, subdomainOf, type RouteChange } from "../../../src/proxy/routes";
import { proxyErrorAnswer } from "../../../src/proxy/pages";

test("case, port and a trailing dot do not matter; other names are no app", () => {
  for (const host of ["shop.apps.example.com", "SHOP.Apps.Example.COM", "shop.apps.example.com:8080", "shop.apps.example.com.", "shop.apps.example.com.:80"]) {
    expect(subdomainOf(host, "apps.example.com")).toBe("shop");
  }
  for (const host of [null, "", "apps.example.com", "a.shop.apps.example.com", "shop.example.com", "[::1]:80", "evilapps.example.com"]) {
    expect(subdomainOf(host, "apps.example.com")).toBeNull();
  }
});

test("a copy of the table, made from its changes or kept by them, routes every host as the table does", () => {
  const table = new ProxyRoutes();
  table.set("shop", { host: "10.0.0.2", port: 3000 });
  table.set("blog", { host: "10.0.0.3", port: 8000 });
  const fromStart = new ProxyRoutes();
  for (const change of table.changes()) fromStart.apply(change);
  const kept = new ProxyRoutes();
  for (const change of table.changes()) kept.apply(change);
  table.onChange = (change) => kept.apply(change);

  table.setPolicy("shop", { httpsRedirect: false, rateLimits: { perClient: { burst: 5, refillPerSecond: 1 }, perHost: { burst: 50, refillPerSecond: 10 } } });
  table.setPolicy("gone", { hsts: true });
  table.set("docs", { host: "10.0.0.4", port: 5000 });
  table.delete("blog");
  table.setDomain("shop.example.com", "shop");
  table.setDomain("old.example.com", "docs");
  table.deleteDomain("old.example.com");
  table.setApi("platform.example.com", { host: "127.0.0.1", port: 3000 });
  const late = new ProxyRoutes();
  for (const change of table.changes()) late.apply(change);

  const routed = (routes: ProxyRoutes) =>
    ["shop.apps.test", "blog.apps.test", "docs.apps.test", "platform.example.com", "shop.example.com", "old.example.com"].map((host) => {
      const subdomain = routes.fixedRouteOf(host, "apps.test") ?? routes.subdomainOfDomain(host);
      return { host, subdomain, upstream: subdomain === null ? undefined : routes.get(subdomain) };
    });
  expect(routed(table)).toEqual([
    { host: "shop.apps.test", subdomain: "shop", upstream: { host: "10.0.0.2", port: 3000, httpsRedirect: false, rateLimits: { perClient: { burst: 5, refillPerSecond: 1 }, perHost: { burst: 50, refillPerSecond: 10 } } } },
    { host: "blog.apps.test", subdomain: "blog", upstream: undefined },
    { host: "docs.apps.test", subdomain: "docs", upstream: { host: "10.0.0.4", port: 5000 } },
    { host: "platform.example.com", subdomain: API_ROUTE, upstream: { host: "127.0.0.1", port: 3000 } },
    { host: "shop.example.com", subdomain: "shop", upstream: routed(table)[0]!.upstream },
    { host: "old.example.com", subdomain: null, upstream: undefined },
  ]);
  expect(routed(kept)).toEqual(routed(table));
  expect(routed(late)).toEqual(routed(table));
  // The copy made at the start saw none of the later changes.
  expect(routed(fromStart)).not.toEqual(routed(table));
});

test("a vacated subdomain loses its route, and copies are told even when it had none (a stopped app deleted)", () => {
  const table = new ProxyRoutes();
  table.set("shop", { host: "10.0.0.2", port: 3000 });
  const told: RouteChange[] = [];
  table.onChange = (change) => told.push(change);
  table.vacate("shop");
  table.vacate("stopped");
  expect(table.get("shop")).toBeUndefined();
  expect(told).toEqual([
    { kind: "vacate", subdomain: "shop" },
    { kind: "vacate", subdomain: "stopped" },
  ]);
});

/** A whole response as the proxy writes it: head fields (lowercase names) and body. */
function parsed(answer: Uint8Array) {
  const text = Buffer.from(answer).toString("utf8");
  const [head = "", body = ""] = text.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const fields = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 2)]));
  return { statusLine, fields, body };
}

test("the proxy's own answers: HTML by default, JSON when asked, framed by their length", () => {
  const html = parsed(proxyErrorAnswer(404, "APP_NOT_FOUND", "No app <here>.", "text/html,application/json", {}, false));
  expect(html.statusLine).toBe("HTTP/1.1 404 Not Found");
  expect(html.fields["content-type"]).toContain("text/html");
  expect(html.body).toContain("No app &#60;here&#62;.");
  expect(html.body).toContain("APP_NOT_FOUND");
  expect(Number(html.fields["content-length"])).toBe(Buffer.byteLength(html.body));
  expect(html.fields.connection).toBeUndefined();

  const json = parsed(proxyErrorAnswer(503, "APP_UNAVAILABLE", "Not running.", "application/json", { "retry-after": "30" }, true));
  expect(json.statusLine).toBe("HTTP/1.1 503 Service Unavailable");
  expect(json.fields["retry-after"]).toBe("30");
  expect(json.fields.connection).toBe("close");
  expect(json.fields["cache-control"]).toBe("no-store");
  expect(JSON.parse(json.body)).toEqual({ success: false, error: "Not running.", code: "APP_UNAVAILABLE" });
});
