import { describe, expect, test } from "bun:test";
import { detectPlan, planWithCommand, DetectionFailed, STATIC_SERVER_PATH, type AppFiles } from "../../../src/apps/detect";

function tree(files: Record<string, string | object>): AppFiles {
  const texts = Object.fromEntries(Object.entries(files).map(([path, content]) => [path, typeof content === "string" ? content : JSON.stringify(content)]));
  return { paths: new Set(Object.keys(texts)), read: (path) => texts[path] };
}

describe("startup detection", () => {
  test("Vite: install, build, then the static server serves dist/", () => {
    const plan = detectPlan(tree({ "package.json": { scripts: { build: "vite build" }, devDependencies: { vite: "^5" } }, "index.html": "" }), "node");
    expect(plan).toMatchObject({ kind: "vite", installCommands: ["npm install --no-audit --no-fund"], buildCommands: ["npm run build"], staticRoot: "dist" });
    expect(plan.start).toEqual(["node", STATIC_SERVER_PATH, "dist"]);
  });

  test("Next.js: build, then next start on $PORT", () => {
    const plan = detectPlan(tree({ "package.json": { dependencies: { next: "15", react: "19" }, scripts: { build: "next build" } }, "package-lock.json": "{}" }), "node");
    expect(plan.kind).toBe("next");
    expect(plan.installCommands).toEqual(["npm ci --no-audit --no-fund"]);
    expect(plan.buildCommands).toEqual(["npm run build"]);
    expect(plan.start.join(" ")).toContain('next start -H 0.0.0.0 -p "$PORT"');
  });

  test("plain Node: start script, else main, else index/server/app.js", () => {
    expect(detectPlan(tree({ "package.json": { scripts: { start: "node a.js" } } }), "node").start).toEqual(["npm", "start"]);
    expect(detectPlan(tree({ "package.json": { main: "lib/main.js" }, "lib/main.js": "" }), "node").start).toEqual(["node", "lib/main.js"]);
    expect(detectPlan(tree({ "package.json": {}, "server.js": "" }), "node").start).toEqual(["node", "server.js"]);
    expect(detectPlan(tree({ "app.js": "" }), "node").start).toEqual(["node", "app.js"]);
  });

  test("no dependencies means no install step", () => {
    expect(detectPlan(tree({ "package.json": { scripts: { start: "node a.js" } } }), "node").installCommands).toEqual([]);
  });

  test("Bun: bun install, start script or index.ts", () => {
    const withScript = detectPlan(tree({ "package.json": { scripts: { start: "bun run src/x.ts" }, dependencies: { hono: "4" } } }), "bun");
    expect(withScript).toMatchObject({ kind: "bun", installCommands: ["bun install"], start: ["bun", "run", "start"] });
    expect(detectPlan(tree({ "index.ts": "" }), "bun").start).toEqual(["bun", "index.ts"]);
  });

  test("static site: index.html without package.json", () => {
    expect(detectPlan(tree({ "index.html": "<h1>" }), "node")).toMatchObject({ kind: "static", staticRoot: ".", start: ["node", STATIC_SERVER_PATH, "."] });
    expect(detectPlan(tree({ "index.html": "<h1>" }), "bun").start[0]).toBe("bun");
    expect(detectPlan(tree({ "index.html": "<h1>" }), "python").start.join(" ")).toContain("http.server");
  });

  test("Python: FastAPI, Flask, Django, else main.py/app.py", () => {
    const fastapi = detectPlan(tree({ "requirements.txt": "fastapi==0.115\nuvicorn\n", "main.py": "" }), "python");
    expect(fastapi.kind).toBe("fastapi");
    expect(fastapi.installCommands).toEqual(["pip install --no-cache-dir -r requirements.txt"]);
    expect(fastapi.start.join(" ")).toContain('uvicorn main:app --host 0.0.0.0 --port "$PORT"');
    expect(detectPlan(tree({ "requirements.txt": "Flask>=3\n", "app.py": "" }), "python").start.join(" ")).toContain("flask --app app run");
    expect(detectPlan(tree({ "requirements.txt": "django\n", "manage.py": "" }), "python").kind).toBe("django");
    const plain = detectPlan(tree({ "app.py": "" }), "python");
    expect(plain).toMatchObject({ kind: "python", installCommands: [], start: ["python", "app.py"] });
  });

  test("nothing to start: a clear error asking for a startupCommand", () => {
    expect(() => detectPlan(tree({ "README.md": "" }), "node")).toThrow(DetectionFailed);
    expect(() => detectPlan(tree({ "package.json": {} }), "node")).toThrow(/startupCommand/);
    expect(() => detectPlan(tree({ "lib.py": "" }), "python")).toThrow(/startupCommand/);
  });

  test("a custom command replaces the detected start and keeps install and build", () => {
    const plan = planWithCommand(tree({ "package.json": { dependencies: { a: "1" }, scripts: { build: "tsc" } } }), "node", "node dist/worker.js --queue 'jobs'");
    expect(plan).toMatchObject({ kind: "custom", installCommands: ["npm install --no-audit --no-fund"], buildCommands: ["npm run build"] });
    expect(plan.start).toEqual(["sh", "-c", "node dist/worker.js --queue 'jobs'"]);
    expect(planWithCommand(tree({ "README.md": "" }), "node", "./run.sh").start).toEqual(["sh", "-c", "./run.sh"]);
  });
});
