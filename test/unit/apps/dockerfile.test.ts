// What a build runs and the Dockerfile of the app image: the build-time settings reach only the
// build container, the Dockerfile runs no user code, and registry credentials are recognised.
import { describe, expect, test } from "bun:test";
import { detectPlan, planWithCommand, type AppFiles } from "../../../src/apps/detect";
import { BUILD_CA_PATH, buildEnv, buildScript, generateDockerfile, hasBuildSteps, platformFiles } from "../../../src/apps/dockerfile";
import { registrySecrets } from "../../../src/apps/builder";
import { redact } from "../../../src/crypto/redact";

function tree(files: Record<string, string | object>): AppFiles {
  const texts = Object.fromEntries(Object.entries(files).map(([path, content]) => [path, typeof content === "string" ? content : JSON.stringify(content)]));
  return { paths: new Set(Object.keys(texts)), read: (path) => texts[path] };
}

const plan = detectPlan(tree({ "package.json": { dependencies: { a: "1" }, scripts: { start: "node s.js", build: "tsc" } } }), "node");
const settings = {
  baseImage: "node:22-bookworm-slim",
  runtime: "node" as const,
  port: 8080,
  caBundle: "PEM",
  npmRegistry: "https://registry.example/",
  buildArgs: { VITE_API: "https://api.example" },
  labels: { "platform.build": "bld_1" },
};

describe("build container", () => {
  test("gets the CA bundle, the registry and the public build-time variables", () => {
    expect(buildEnv(settings)).toEqual({
      NODE_EXTRA_CA_CERTS: BUILD_CA_PATH,
      SSL_CERT_FILE: BUILD_CA_PATH,
      PIP_CERT: BUILD_CA_PATH,
      REQUESTS_CA_BUNDLE: BUILD_CA_PATH,
      NPM_CONFIG_REGISTRY: "https://registry.example/",
      BUN_CONFIG_REGISTRY: "https://registry.example/",
      VITE_API: "https://api.example",
    });
    expect(BUILD_CA_PATH.startsWith("/app/")).toBe(false); // never copied into the image
  });

  test("runs install then build, stops at the first failure, and echoes each step", () => {
    expect(buildScript(plan, "node")).toBe("set -ex\nnpm install --no-audit --no-fund\nnpm run build\n");
    expect(hasBuildSteps(plan)).toBe(true);
    expect(hasBuildSteps(detectPlan(tree({ "index.html": "" }), "node"))).toBe(false);
  });

  test("python gets a virtualenv inside /app only when there is something to install", () => {
    const withRequirements = detectPlan(tree({ "requirements.txt": "flask\n", "app.py": "" }), "python");
    expect(buildScript(withRequirements, "python")).toContain("python -m venv /app/.venv\nexport PATH=\"/app/.venv/bin:$PATH\"\npip install");
    expect(generateDockerfile(withRequirements, { ...settings, runtime: "python" }, "built:1")).toContain("ENV PORT=8080 PATH=/app/.venv/bin:$PATH");
    expect(generateDockerfile(detectPlan(tree({ "main.py": "" }), "python"), { ...settings, runtime: "python" }, null)).not.toContain("venv");
  });
});

describe("app image Dockerfile", () => {
  test("copies /app of the build and runs nothing: no RUN step, no build-time setting", () => {
    const dockerfile = generateDockerfile(plan, settings, "platform-build-app_1:bld_1");
    expect(dockerfile).not.toMatch(/^RUN /m);
    expect(dockerfile).not.toMatch(/CA_CERTS|REGISTRY|VITE_API|pem/);
    expect(dockerfile.split("\n").filter(Boolean)).toEqual([
      "FROM node:22-bookworm-slim",
      "WORKDIR /app",
      "COPY --from=platform-build-app_1:bld_1 /app /app",
      "ENV PORT=8080 NODE_ENV=production",
      "EXPOSE 8080",
      'CMD ["npm","start"]',
      'LABEL platform.build="bld_1"',
    ]);
  });

  test("without build steps the source is copied from the context", () => {
    const site = detectPlan(tree({ "index.html": "" }), "node");
    expect(generateDockerfile(site, settings, null)).toContain("\nCOPY . /app\n");
    expect(Object.keys(platformFiles(site))).toEqual([".platform/static-server.mjs"]);
  });

  test("a custom command is one JSON argv: its quotes and newlines cannot add Dockerfile lines", () => {
    const custom = planWithCommand(tree({ "index.js": "" }), "node", 'echo "a\\b" && node index.js\n# not a Dockerfile line');
    const cmdLine = generateDockerfile(custom, settings, null).split("\n").find((line) => line.startsWith("CMD "))!;
    expect(JSON.parse(cmdLine.slice(4))).toEqual(["sh", "-c", 'echo "a\\b" && node index.js\n# not a Dockerfile line']);
  });
});

describe("registry credentials", () => {
  test("user:password, a token as user and token parameters are masked wherever the URL shows", () => {
    const cases = [
      ["https://deploy:s3cr%40t-pass@npm.example.com/", ["s3cr%40t-pass", "s3cr@t-pass"]],
      ["https://tok_abcdef123456@npm.example.com/repo/", ["tok_abcdef123456"]],
      ["https://npm.example.com/?_authToken=abcd-efgh-1234", ["abcd-efgh-1234"]],
    ] as const;
    for (const [url, hidden] of cases) {
      const line = redact(`npm error request to ${url}is-number failed; password ${hidden.at(-1)}`, registrySecrets(url));
      for (const secret of hidden) expect(line).not.toContain(secret);
      expect(line).toContain("npm.example.com");
    }
    expect(registrySecrets("https://registry.npmjs.org/")).toEqual([]);
    expect(registrySecrets(undefined)).toEqual([]);
  });
});
