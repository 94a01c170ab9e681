// The built-in static server of static sites and Vite builds, copied into the app's image as
// .platform/static-server.mjs. Runs on node or bun: `node static-server.mjs <root>`, port from $PORT.
// Serves files under <root> only, index.html for folders, and index.html for unknown paths
// without an extension (single-page apps).
import { createServer } from "node:http";
import { createReadStream, statSync } from "node:fs";
import { extname, join, resolve, sep } from "node:path";

const root = resolve(process.argv[2] ?? ".");
const port = Number(process.env.PORT ?? 3000);
const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8", ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png",
  ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8", ".wasm": "application/wasm", ".woff2": "font/woff2", ".woff": "font/woff",
};

function fileFor(pathname) {
  let decoded;
  try { decoded = decodeURIComponent(pathname); } catch { return null; }
  const target = resolve(join(root, decoded));
  if (target !== root && !target.startsWith(root + sep)) return null;
  try {
    const stat = statSync(target);
    if (stat.isFile()) return target;
    if (stat.isDirectory()) return statSync(join(target, "index.html")).isFile() ? join(target, "index.html") : null;
  } catch {}
  return extname(decoded) === "" ? join(root, "index.html") : null;
}

createServer((request, response) => {
  const file = fileFor(new URL(request.url ?? "/", "http://x").pathname);
  if (!file || (request.method !== "GET" && request.method !== "HEAD")) {
    response.writeHead(file ? 405 : 404, { "content-type": "text/plain" }).end(file ? "Method Not Allowed" : "Not Found");
    return;
  }
  let size;
  try { size = statSync(file).size; } catch { response.writeHead(404).end("Not Found"); return; }
  response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "content-length": size });
  if (request.method === "HEAD") response.end();
  else createReadStream(file).pipe(response);
}).listen(port, "0.0.0.0", () => console.log(`static server on :${port} serving ${root}`));
