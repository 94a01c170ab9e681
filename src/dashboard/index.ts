// Serves the dashboard: static files from static/, embedded in the binary at build time.
import { Elysia } from "elysia";
import indexHtmlFile from "../../static/index.html" with { type: "file" };
import appJs from "../../static/app.js" with { type: "file" };
import appCss from "../../static/app.css" with { type: "file" };
// Built by scripts/build-dashboard.ts from static/ui (the test preload and `bun run build` run it).
import pagesCss from "../../static/pages.css" with { type: "file" };

// bun-types describes HTML imports as bundles; with `type: "file"` they are a path like the others.
const indexHtml = indexHtmlFile as unknown as string;

const ASSETS: Record<string, { path: string; type: string }> = {
  "/app.js": { path: appJs, type: "text/javascript; charset=utf-8" },
  "/app.css": { path: appCss, type: "text/css; charset=utf-8" },
  "/pages.css": { path: pagesCss, type: "text/css; charset=utf-8" },
};

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

export function dashboardRoutes() {
  const app = new Elysia().get(
    "/",
    () => new Response(Bun.file(indexHtml), { headers: { "content-type": "text/html; charset=utf-8", ...SECURITY_HEADERS } }),
    { detail: { hide: true } },
  );
  for (const [route, asset] of Object.entries(ASSETS)) {
    app.get(route, () => new Response(Bun.file(asset.path), { headers: { "content-type": asset.type, ...SECURITY_HEADERS } }), {
      detail: { hide: true },
    });
  }
  return app;
}
