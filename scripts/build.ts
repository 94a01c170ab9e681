// `bun run build`: builds the dashboard (./build-dashboard.ts), then compiles the platform into the
// single executable ./platform, with the dashboard, docs assets and migrations embedded.
//
// dockerode loads @grpc/grpc-js and protobufjs at import for BuildKit sessions (~30 MB of idle
// memory). The platform builds images with the classic builder only, so in the binary that one
// module is replaced by a stub that says so.
// docker-modem loads ssh2 at import for ssh:// engine hosts, whose WebAssembly memory is 34 MB of
// the JavaScript heap. The platform reaches engines over unix:// and tcp:// only
// (src/docker/connection.ts), so that module is stubbed too. With ssh2 loaded the public proxy
// also served 2-4% fewer req/s (JavaScriptCore lets more garbage build up before collecting a
// larger heap, and memory fresh for each request is slower to write than memory reused).
import type { BunPlugin } from "bun";
import { buildDashboard } from "./build-dashboard";

const withoutUnusedDockerTransports: BunPlugin = {
  name: "dockerode-without-buildkit-sessions-or-ssh",
  setup(build) {
    build.onLoad({ filter: /dockerode[\\/]lib[\\/]session\.js$/ }, () => ({
      loader: "js",
      contents:
        "module.exports = function withSession(docker, auth, handler) {" +
        " handler(new Error('BuildKit sessions are not available in the platform binary')); };",
    }));
    build.onLoad({ filter: /docker-modem[\\/]lib[\\/]ssh\.js$/ }, () => ({
      loader: "js",
      contents: "module.exports = function ssh() { throw new Error('ssh:// Docker hosts are not available in the platform binary: use unix:// or tcp://'); };",
    }));
  },
};

const pageBytes = await buildDashboard();
console.log(`built static/app.js: the dashboard page weighs ${(pageBytes / 1024).toFixed(1)} KB uncompressed`);

const result = await Bun.build({
  // The public proxy's thread (src/proxy/thread.ts) is a Worker: its entry is bundled beside main's.
  entrypoints: ["./src/main.ts", "./src/proxy-worker.ts"],
  compile: { outfile: "./platform" },
  minify: { syntax: true, whitespace: true },
  sourcemap: "none",
  plugins: [withoutUnusedDockerTransports],
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ./platform`);
