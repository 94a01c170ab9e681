// Which builder makes an app's image and what its build log says about the choice, what a
// Dockerfile build leaves out of the context (.dockerignore) and gives to the Dockerfile, and what
// a built image may not carry. What a Dockerfile may say: ./dockerfile-rewrite.test.ts.
import { describe, expect, test } from "bun:test";
import { DetectionFailed, type AppFiles } from "../../../src/apps/detect";
import { chooseBuilder, CONTEXT_CA_FILE, dockerfileBuildArgs, dockerignoreFilter, reviewImage } from "../../../src/apps/dockerfile-build";
import { BuildFailed } from "../../../src/docker/driver";

function tree(files: Record<string, string>): AppFiles {
  return { paths: new Set(Object.keys(files)), read: (path) => files[path] };
}

const DOCKERFILE = "FROM platform-test/node:latest\nCMD [\"node\", \"serve.mjs\"]\n";
const nodeApp = { "package.json": JSON.stringify({ scripts: { start: "node server.js" } }), "server.js": "" };
const auto = { builder: "auto" as const, runtime: "node" as const, startupCommand: "auto" };
const dockerfile = { ...auto, builder: "dockerfile" as const };

describe("choosing the builder", () => {
  test('"dockerfile" builds the Dockerfile even when the runtime plan would detect the app', () => {
    const choice = chooseBuilder(tree({ ...nodeApp, Dockerfile: DOCKERFILE }), dockerfile);
    expect(choice).toEqual({ builder: "dockerfile", logLines: ['==> Builder: Dockerfile (builder setting "dockerfile")'] });
  });

  test('"dockerfile" without a Dockerfile at the root fails the build with a clear message', () => {
    expect(() => chooseBuilder(tree({ ...nodeApp, "docker/Dockerfile": DOCKERFILE }), dockerfile)).toThrow(
      new BuildFailed('the builder setting is "dockerfile" but the source has no Dockerfile at its root'),
    );
  });

  test('"dockerfile" says that a startupCommand is not used', () => {
    const choice = chooseBuilder(tree({ Dockerfile: DOCKERFILE }), { ...dockerfile, startupCommand: "node other.js" });
    expect(choice.logLines).toEqual([
      '==> Builder: Dockerfile (builder setting "dockerfile")',
      "    startupCommand is not used: the Dockerfile's ENTRYPOINT and CMD start the app",
    ]);
  });

  test('"auto" falls back to the Dockerfile only when detection finds nothing, and says why', () => {
    const choice = chooseBuilder(tree({ Dockerfile: DOCKERFILE, "serve.mjs": "" }), auto);
    expect(choice.builder).toBe("dockerfile");
    expect(choice.logLines[0]).toBe('==> Builder: Dockerfile (builder "auto": nothing detected for runtime node; the source has a Dockerfile)');
    expect(choice.logLines[1]).toStartWith("    detection: No package.json, index.html or entry file");
  });

  test('"auto" keeps the runtime plan when it detects the app, and says the Dockerfile is not used and how to use it', () => {
    const choice = chooseBuilder(tree({ ...nodeApp, Dockerfile: DOCKERFILE }), auto);
    expect(choice.builder).toBe("runtime");
    expect(choice.logLines).toEqual([
      "==> Runtime node, detected: node",
      "    package.json found, no dependencies to install",
      "    start script found: npm run start",
      "    start: npm start",
      '    the Dockerfile is not used: builder "auto" builds it only when nothing is detected; set builder to "dockerfile" to use it',
    ]);
  });

  test('"auto" without a Dockerfile: the runtime plan, and no word of a Dockerfile', () => {
    const choice = chooseBuilder(tree(nodeApp), auto);
    expect(choice.builder).toBe("runtime");
    expect(choice.logLines.join("\n")).not.toContain("Dockerfile");
  });

  test('"auto" with a custom startupCommand keeps the runtime plan: the command is the start', () => {
    const choice = chooseBuilder(tree({ Dockerfile: DOCKERFILE, "serve.mjs": "" }), { ...auto, startupCommand: "node serve.mjs" });
    expect(choice.builder).toBe("runtime");
    if (choice.builder === "runtime") expect(choice.plan.start).toEqual(["sh", "-c", "node serve.mjs"]);
  });

  test('"auto" with nothing detected and no Dockerfile fails, naming both ways out', () => {
    let thrown: unknown;
    try {
      chooseBuilder(tree({ "serve.mjs": "" }), auto);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DetectionFailed);
    expect((thrown as Error).message).toEndWith("set a startupCommand, or add a Dockerfile");
  });
});

describe(".dockerignore", () => {
  const kept = (text: string, paths: string[]) => paths.filter((path) => !dockerignoreFilter(text)(path));

  test("a pattern leaves out what it matches and everything under a folder it matches", () => {
    const paths = ["secrets/key.pem", "secrets", "src/secrets/x", "src/a.js", "notes.md", "docs/notes.md", "a.log", "logs/b.log"];
    expect(kept("secrets\n*.md\n", paths)).toEqual(["src/secrets/x", "src/a.js", "docs/notes.md", "a.log", "logs/b.log"]);
    expect(kept("**/*.log\n**/secrets", paths)).toEqual(["src/a.js", "notes.md", "docs/notes.md"]);
  });

  test("`*` and `?` stay within one folder; `**` spans any number", () => {
    const paths = ["a/x.js", "a/b/x.js", "ab.js", "a/b/c/d.js"];
    expect(kept("a/*.js", paths)).toEqual(["a/b/x.js", "ab.js", "a/b/c/d.js"]);
    expect(kept("a?.js", paths)).toEqual(["a/x.js", "a/b/x.js", "a/b/c/d.js"]);
    expect(kept("a/**/d.js", paths)).toEqual(["a/x.js", "a/b/x.js", "ab.js"]);
  });

  test("`!` takes an exclusion back and the last matching line wins; comments and blank lines are skipped", () => {
    const paths = ["docs/a.md", "docs/keep.md", "README.md"];
    expect(kept("# docs\n\ndocs\n!docs/keep.md\n", paths)).toEqual(["docs/keep.md", "README.md"]);
    expect(kept("!docs/keep.md\ndocs\n", paths)).toEqual(["README.md"]);
  });

  test("patterns are cleaned: a leading slash, ./ and doubled slashes mean the same path; regex characters are literal", () => {
    const paths = ["build/out.js", "src/build/out.js", "a+b(1).txt", "aab1.txt"];
    expect(kept("/build\n", paths)).toEqual(["src/build/out.js", "a+b(1).txt", "aab1.txt"]);
    expect(kept("./src//build", paths)).toEqual(["build/out.js", "a+b(1).txt", "aab1.txt"]);
    expect(kept("a+b(1).txt", paths)).toEqual(["build/out.js", "src/build/out.js", "aab1.txt"]);
    expect(kept("[ab]ab?.txt\n", paths)).toEqual(["build/out.js", "src/build/out.js", "a+b(1).txt"]);
    expect(kept("[!x]ab?.txt\n", paths)).toEqual(["build/out.js", "src/build/out.js", "a+b(1).txt"]);
  });

  test("the user's Dockerfile is a file like any other: the engine reads the platform's", () => {
    expect(kept("*\n!server.js\n", ["Dockerfile", "server.js", "sub/Dockerfile"])).toEqual(["server.js"]);
  });

  test("a malformed pattern fails the build with a message naming it", () => {
    expect(() => dockerignoreFilter("src/[abc\n")).toThrow(new BuildFailed('.dockerignore: the pattern "src/[abc" is malformed'));
  });
});

describe("what a Dockerfile receives", () => {
  test("the public build-time variables, the registry and the CA file's context path, as build arguments", () => {
    expect(dockerfileBuildArgs({ caBundle: "PEM", npmRegistry: "https://registry.example/", buildTimeVars: { VITE_API: "https://api.example" } })).toEqual({
      VITE_API: "https://api.example",
      NPM_CONFIG_REGISTRY: "https://registry.example/",
      BUN_CONFIG_REGISTRY: "https://registry.example/",
      PLATFORM_CA_FILE: CONTEXT_CA_FILE,
    });
    expect(CONTEXT_CA_FILE.startsWith(".platform/")).toBe(true); // user files there are never in the context
  });

  test("nothing the platform does not set", () => {
    expect(dockerfileBuildArgs({ buildTimeVars: {} })).toEqual({});
  });
});

describe("the built image", () => {
  const labels = { "platform.managed": "true", "platform.workspace": "ws_1", "platform.app": "app_1", "platform.build": "bld_1" };
  const runAs = { port: 3000, user: "1000:1000", labels };
  const image = { id: "sha256:1", names: [], onBuild: [], labels: { ...labels, "org.opencontainers.image.title": "mine" }, user: "", exposedPorts: [], volumes: [], sizeBytes: 0 };

  test("may not carry a platform label of its own: the platform would take its containers for a database's or a verify's", () => {
    expect(reviewImage({ ...image, labels: { ...image.labels, "platform.database": "db_other" } }, runAs)).toEqual({
      refused: 'the image has the label platform.database: labels starting with "platform." are the platform\'s own',
      notes: [],
    });
  });

  test("the log says its USER is replaced by the platform's app user, and other labels are fine", () => {
    expect(reviewImage({ ...image, user: "root" }, runAs)).toEqual({ notes: ["runs as 1000:1000 (PLATFORM_APP_USER), not as the image's user root"] });
    expect(reviewImage(image, runAs).notes).toEqual(["runs as 1000:1000 (PLATFORM_APP_USER), not as the image's user root"]);
    expect(reviewImage({ ...image, user: "1000:1000" }, runAs)).toEqual({ notes: [] });
    expect(reviewImage({ ...image, user: "root" }, { ...runAs, user: undefined })).toEqual({ notes: [] });
  });

  test("the log says when the image exposes other ports than the app's, and what a VOLUME means here", () => {
    const notes = reviewImage({ ...image, user: "1000:1000", exposedPorts: ["8080/tcp"], volumes: ["/data"] }, runAs).notes;
    expect(notes).toEqual([
      "the image exposes 8080/tcp, but the app is reached on port 3000 (exposePort; PORT=3000 is set)",
      "VOLUME /data: each new container starts with an empty volume there; nothing in it outlives a redeploy",
    ]);
    expect(reviewImage({ ...image, user: "1000:1000", exposedPorts: ["3000/tcp", "9229/tcp"] }, runAs).notes).toEqual([]);
  });
});
