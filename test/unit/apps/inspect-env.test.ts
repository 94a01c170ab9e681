import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { inspectEnv, inspectEnvInZip, type EnvVariable } from "../../../src/apps/inspect-env";
import { ApiError } from "../../../src/http/errors";
import { tempDir } from "../../helpers/temp";
import { makeZip } from "../../helpers/zip";

const limits = { maxArchiveEntries: 100, maxUncompressedBytes: 16 * 1024 * 1024 };

async function inspect(files: Record<string, string>): Promise<EnvVariable[]> {
  return (await inspectEnv(new Map(Object.entries(files)))).variables;
}

async function variable(files: Record<string, string>, name: string): Promise<EnvVariable | undefined> {
  return (await inspect(files)).find((found) => found.name === name);
}

const names = (variables: EnvVariable[]) => variables.map((found) => found.name);

describe("JavaScript and TypeScript references", () => {
  test("every access form is found, with its file and line", async () => {
    const source = [
      "const a = process.env.DATABASE_URL;", // 1
      'const b = process.env["API_KEY"];', // 2
      "const c = process.env['SECRET_TOKEN'];", // 3
      "const d = import.meta.env.VITE_API_URL;", // 4
      "const e = Bun.env.BUN_ONLY;", // 5
      "const f = process.env[`TEMPLATE_KEY`];", // 6
      "const g = process.env?.OPTIONAL_CHAIN;", // 7
      'const h = import.meta.env["VITE_BRACKET"];', // 8
      "const i = Bun.env['BUN_BRACKET'];", // 9
    ].join("\n");
    const variables = await inspect({ "src/config.ts": source });
    expect(names(variables)).toEqual([
      "API_KEY",
      "BUN_BRACKET",
      "BUN_ONLY",
      "DATABASE_URL",
      "OPTIONAL_CHAIN",
      "SECRET_TOKEN",
      "TEMPLATE_KEY",
      "VITE_API_URL",
      "VITE_BRACKET",
    ]);
    const line = (name: string) => variables.find((found) => found.name === name)!.references;
    expect(line("DATABASE_URL")).toEqual([{ file: "src/config.ts", line: 1 }]);
    expect(line("API_KEY")).toEqual([{ file: "src/config.ts", line: 2 }]);
    expect(line("SECRET_TOKEN")).toEqual([{ file: "src/config.ts", line: 3 }]);
    expect(line("VITE_API_URL")).toEqual([{ file: "src/config.ts", line: 4 }]);
    expect(line("BUN_ONLY")).toEqual([{ file: "src/config.ts", line: 5 }]);
    expect(line("TEMPLATE_KEY")).toEqual([{ file: "src/config.ts", line: 6 }]);
    expect(line("OPTIONAL_CHAIN")).toEqual([{ file: "src/config.ts", line: 7 }]);
    expect(line("VITE_BRACKET")).toEqual([{ file: "src/config.ts", line: 8 }]);
    expect(line("BUN_BRACKET")).toEqual([{ file: "src/config.ts", line: 9 }]);
    expect(variables.every((found) => found.required && !found.builtin && !found.hasExampleValue)).toBe(true);
  });

  test("every listed extension is scanned, others are not", async () => {
    const extensions = ["js", "mjs", "cjs", "ts", "tsx", "jsx", "vue", "svelte"];
    const files = Object.fromEntries(extensions.map((ext) => [`src/file.${ext}`, `x = process.env.FROM_${ext.toUpperCase()}`]));
    const variables = await inspect({ ...files, "README.md": "process.env.FROM_MD", "notes.txt": "process.env.FROM_TXT" });
    expect(names(variables)).toEqual(extensions.map((ext) => `FROM_${ext.toUpperCase()}`).sort());
  });

  test("references across files are merged and sorted by file, then line", async () => {
    const found = await variable(
      {
        "src/b.js": "\n\nprocess.env.SHARED\nprocess.env.SHARED",
        "src/a.js": "process.env.SHARED; process.env.SHARED",
        "components/App.vue": "<script setup>\nconst u = import.meta.env.SHARED\n</script>",
      },
      "SHARED",
    );
    expect(found!.references).toEqual([
      { file: "components/App.vue", line: 2 },
      { file: "src/a.js", line: 1 },
      { file: "src/b.js", line: 3 },
      { file: "src/b.js", line: 4 },
    ]);
  });

  test("a fallback in every reference makes a variable optional; one bare reference makes it required", async () => {
    const variables = await inspect({
      "a.js": [
        'const level = process.env.LOG_LEVEL || "info";',
        'const host = process.env["BIND_HOST"] ?? "0.0.0.0";',
        "const mixed = process.env.MIXED ?? 1;",
        "process.env.ASSIGNED = 'x';",
        "process.env.LAZY ||= 'y';",
        "if (process.env.COMPARED === 'yes') {}",
      ].join("\n"),
      "b.js": "const again = process.env.MIXED;",
    });
    const required = Object.fromEntries(variables.map((found) => [found.name, found.required]));
    expect(required).toEqual({
      ASSIGNED: false,
      BIND_HOST: false,
      COMPARED: true,
      LAZY: false,
      LOG_LEVEL: false,
      MIXED: true,
    });
  });

  test("destructuring from process.env, with defaults and renames", async () => {
    const source = [
      "const {",
      "  DB_HOST,",
      '  DB_PORT = "5432",',
      "  DB_USER: user,",
      '  DB_PASS: pass = fallback("a", "b"),',
      "  ...rest",
      "} = process.env;",
    ].join("\n");
    const variables = await inspect({ "db.js": source });
    expect(variables.map(({ name, required, references }) => ({ name, required, line: references[0]!.line }))).toEqual([
      { name: "DB_HOST", required: true, line: 2 },
      { name: "DB_PASS", required: false, line: 5 },
      { name: "DB_PORT", required: false, line: 3 },
      { name: "DB_USER", required: true, line: 4 },
    ]);
  });

  test("dynamic keys, methods and look-alikes are not variables", async () => {
    const variables = await inspect({
      "a.js": [
        "process.env[name]",
        "process.env[`PREFIX_${x}`]",
        'process.env.hasOwnProperty("REAL")',
        "Object.keys(process.env)",
        "myprocess.env.NOT_THIS",
        "const env = process.env;",
      ].join("\n"),
    });
    expect(names(variables)).toEqual([]);
  });

  test("well-known runtime variables are listed as builtin and never required", async () => {
    const variables = await inspect({
      "server.js": "app.listen(process.env.PORT); if (process.env.NODE_ENV === 'production') {}; process.env.HOME",
      "vite.ts": "import.meta.env.MODE; import.meta.env.DEV",
    });
    expect(variables.map(({ name, builtin, required }) => ({ name, builtin, required }))).toEqual([
      { name: "DEV", builtin: true, required: false },
      { name: "HOME", builtin: true, required: false },
      { name: "MODE", builtin: true, required: false },
      { name: "NODE_ENV", builtin: true, required: false },
      { name: "PORT", builtin: true, required: false },
    ]);
  });
});

describe("Python references", () => {
  test("os.environ[...], os.environ.get and os.getenv, with and without defaults", async () => {
    const source = [
      "import os", // 1
      'db = os.environ["DATABASE_URL"]', // 2
      "key = os.environ['API_KEY']", // 3
      'debug = os.environ.get("DEBUG")', // 4
      'level = os.environ.get("LOG_LEVEL", "info")', // 5
      "secret = os.getenv('SECRET')", // 6
      'port = os.getenv("APP_PORT", "8000")', // 7
      'region = os.getenv("REGION", default="eu")', // 8
      'bucket = os.getenv("BUCKET", None)', // 9
      'name = os.environ.get("SERVICE_NAME") or "svc"', // 10
      'os.environ.setdefault("TZ_NAME", "UTC")', // 11
      'os.environ["SET_HERE"] = "1"', // 12
      'timeout = int(os.getenv("TIMEOUT", str(30)))', // 13
    ].join("\n");
    const variables = await inspect({ "app/main.py": source });
    expect(variables.map(({ name, required, references }) => ({ name, required, line: references[0]!.line }))).toEqual([
      { name: "API_KEY", required: true, line: 3 },
      { name: "APP_PORT", required: false, line: 7 },
      { name: "BUCKET", required: true, line: 9 },
      { name: "DATABASE_URL", required: true, line: 2 },
      { name: "DEBUG", required: true, line: 4 },
      { name: "LOG_LEVEL", required: false, line: 5 },
      { name: "REGION", required: false, line: 8 },
      { name: "SECRET", required: true, line: 6 },
      { name: "SERVICE_NAME", required: false, line: 10 },
      { name: "SET_HERE", required: false, line: 12 },
      { name: "TIMEOUT", required: false, line: 13 },
      { name: "TZ_NAME", required: false, line: 11 },
    ]);
  });

  test("JavaScript patterns are not looked for in Python, nor Python patterns in JavaScript", async () => {
    const variables = await inspect({
      "a.py": "# process.env.JS_IN_PY\nx = 1",
      "b.js": '// os.environ["PY_IN_JS"]',
    });
    expect(names(variables)).toEqual([]);
  });
});

describe("example files", () => {
  test("KEY=value lines, comments, export, quotes and empty values", async () => {
    const example = [
      "# Database", // 1
      "DATABASE_URL=postgres://user:pass@localhost:5432/app", // 2
      "", // 3
      "export API_KEY=", // 4
      'GREETING="hello world" # a comment', // 5
      "SINGLE='it''s'", // 6
      "PLAIN = spaced value   # trailing comment", // 7
      "HASH_IN_VALUE=abc#def", // 8
      'MULTILINE="line one', // 9
      'NOT_A_KEY=inside the quoted value"', // 10
      "AFTER_MULTILINE=yes", // 11
      "   # INDENTED_COMMENT=1", // 12
      "EMPTY_QUOTED=''", // 13
      "not a valid line", // 14
    ].join("\n");
    const variables = await inspect({ ".env.example": example });
    const summary = variables.map(({ name, hasExampleValue, exampleValue, references }) => ({
      name,
      hasExampleValue,
      exampleValue,
      line: references[0]!.line,
    }));
    expect(summary).toEqual([
      { name: "AFTER_MULTILINE", hasExampleValue: true, exampleValue: "yes", line: 11 },
      { name: "API_KEY", hasExampleValue: false, exampleValue: undefined, line: 4 },
      { name: "DATABASE_URL", hasExampleValue: true, exampleValue: "postgres://user:pass@localhost:5432/app", line: 2 },
      { name: "EMPTY_QUOTED", hasExampleValue: false, exampleValue: undefined, line: 13 },
      { name: "GREETING", hasExampleValue: true, exampleValue: "hello world", line: 5 },
      { name: "HASH_IN_VALUE", hasExampleValue: true, exampleValue: "abc#def", line: 8 },
      { name: "MULTILINE", hasExampleValue: true, exampleValue: "line one\nNOT_A_KEY=inside the quoted value", line: 9 },
      { name: "PLAIN", hasExampleValue: true, exampleValue: "spaced value", line: 7 },
      { name: "SINGLE", hasExampleValue: true, exampleValue: "it", line: 6 },
    ]);
    expect(variables.every((found) => found.required)).toBe(true);
    expect("exampleValue" in variables.find((found) => found.name === "API_KEY")!).toBe(false);
  });

  test("Windows line endings", async () => {
    const variables = await inspect({ ".env.example": "# c\r\nFIRST=one\r\nSECOND=\"two\"\r\nTHIRD=\r\n" });
    expect(variables.map(({ name, exampleValue, references }) => ({ name, exampleValue, line: references[0]!.line }))).toEqual([
      { name: "FIRST", exampleValue: "one", line: 2 },
      { name: "SECOND", exampleValue: "two", line: 3 },
      { name: "THIRD", exampleValue: undefined, line: 4 },
    ]);
  });

  test(".env.sample, .env.template and .env.<stage>.example are example files too", async () => {
    const variables = await inspect({
      ".env.sample": "FROM_SAMPLE=1",
      "config/.env.template": "FROM_TEMPLATE=2",
      ".env.production.example": "FROM_STAGE=3",
    });
    expect(variables.map(({ name, exampleValue }) => ({ name, exampleValue }))).toEqual([
      { name: "FROM_SAMPLE", exampleValue: "1" },
      { name: "FROM_STAGE", exampleValue: "3" },
      { name: "FROM_TEMPLATE", exampleValue: "2" },
    ]);
  });

  test("example and code references merge; an example value does not make a variable optional", async () => {
    const found = await variable(
      {
        ".env.example": "# keys\nSTRIPE_KEY=sk_test_123",
        "src/pay.ts": "\nconst stripe = new Stripe(process.env.STRIPE_KEY!);",
      },
      "STRIPE_KEY",
    );
    expect(found).toEqual({
      name: "STRIPE_KEY",
      required: true,
      builtin: false,
      hasExampleValue: true,
      exampleValue: "sk_test_123",
      references: [
        { file: ".env.example", line: 2 },
        { file: "src/pay.ts", line: 2 },
      ],
    });
  });

  test("when example files disagree, the first by path gives the value", async () => {
    const found = await variable({ "b/.env.example": "REGION=us", "a/.env.sample": "REGION=eu", "c/.env.example": "REGION=" }, "REGION");
    expect(found!.exampleValue).toBe("eu");
  });
});

describe("real .env files", () => {
  const CANARY = "canary-4f9d2c-never-leak";

  test("give variable names and lines but never their values", async () => {
    const result = await inspectEnv(
      new Map([
        [".env", `# real secrets\nDB_PASSWORD=${CANARY}\nexport TOKEN="${CANARY}"\nMULTI="${CANARY}\n${CANARY}"\nLAST=${CANARY}`],
        [".env.local", `LOCAL_SECRET='${CANARY}'`],
        [".env.production", `PROD_SECRET=${CANARY}`],
      ]),
    );
    expect(JSON.stringify(result)).not.toContain(CANARY);
    expect(result.variables).toEqual([
      { name: "DB_PASSWORD", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env", line: 2 }] },
      { name: "LAST", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env", line: 6 }] },
      { name: "LOCAL_SECRET", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env.local", line: 1 }] },
      { name: "MULTI", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env", line: 4 }] },
      { name: "PROD_SECRET", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env.production", line: 1 }] },
      { name: "TOKEN", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env", line: 3 }] },
    ]);
  });

  test("a value in .env never becomes the example value of a variable an example file lists", async () => {
    const found = await variable({ ".env": `API_KEY=${CANARY}`, ".env.example": "API_KEY=" }, "API_KEY");
    expect(found!.hasExampleValue).toBe(false);
    expect(JSON.stringify(found)).not.toContain(CANARY);
  });
});

describe("what is skipped", () => {
  test("dependency, build and VCS folders at any depth, and files over 1 MB", async () => {
    const skipped = ["node_modules", ".git", "dist", "build", ".next", "__pycache__", "venv", ".venv"];
    const files: Record<string, string> = { "src/app.js": "process.env.KEPT" };
    for (const dir of skipped) {
      files[`${dir}/x.js`] = `process.env.SKIPPED_${dir.replace(/\W/g, "")}`;
      files[`packages/web/${dir}/x.py`] = `os.getenv("NESTED_${dir.replace(/\W/g, "")}")`;
    }
    files["src/huge.js"] = `process.env.TOO_BIG;\n${"/".repeat(1024 * 1024)}`;
    expect(names(await inspect(files))).toEqual(["KEPT"]);
  });

  test("a file of exactly 1 MB is still scanned", async () => {
    const content = "process.env.AT_LIMIT;";
    const files = { "big.js": content + " ".repeat(1024 * 1024 - content.length) };
    expect(names(await inspect(files))).toEqual(["AT_LIMIT"]);
  });
});

function writeTree(root: string, files: Record<string, string>) {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

describe("on a directory", () => {
  test("gives the same answer as the map form, skipping folders, big files and symlinks", async () => {
    const files = {
      ".env.example": "API_URL=https://example.com",
      ".env": "SECRET=hunter2",
      "src/index.ts": "fetch(process.env.API_URL!)\nconst s = process.env.SECRET",
      "api/app.py": 'import os\nos.environ["PY_KEY"]',
      "node_modules/lib/index.js": "process.env.FROM_DEPENDENCY",
      "dist/bundle.js": "process.env.FROM_BUILD",
      "src/big.js": `process.env.TOO_BIG\n${" ".repeat(1024 * 1024)}`,
    };
    const root = tempDir();
    writeTree(root, files);
    const outside = tempDir();
    writeFileSync(join(outside, "secret.js"), "process.env.THROUGH_SYMLINK");
    symlinkSync(join(outside, "secret.js"), join(root, "src/linked.js"));
    symlinkSync(outside, join(root, "linked-dir"));

    const fromDisk = await inspectEnv(root);
    expect(names(fromDisk.variables)).toEqual(["API_URL", "PY_KEY", "SECRET"]);
    expect(fromDisk).toEqual(await inspectEnv(new Map(Object.entries(files))));
    expect(JSON.stringify(fromDisk)).not.toContain("hunter2");
  });
});

describe("on a ZIP", () => {
  test("extracts with the archive checks, inspects, and removes its temp dir", async () => {
    const zip = makeZip([
      { name: "my-app/" },
      { name: "my-app/.env.example", data: "OPENAI_API_KEY=sk-...\nDEBUG=" },
      { name: "my-app/.env", data: "OPENAI_API_KEY=sk-real-canary" },
      { name: "my-app/main.py", data: 'import os\nkey = os.environ["OPENAI_API_KEY"]\nport = os.getenv("PORT", "8000")' },
      { name: "__MACOSX/my-app/._main.py", data: "junk" },
    ]);
    const root = tempDir();
    const zipFile = join(root, "upload.zip");
    writeFileSync(zipFile, zip);
    const scratch = join(root, "scratch");
    mkdirSync(scratch);

    const result = await inspectEnvInZip(zipFile, limits, scratch);
    expect(result.variables).toEqual([
      { name: "DEBUG", required: true, builtin: false, hasExampleValue: false, references: [{ file: ".env.example", line: 2 }] },
      {
        name: "OPENAI_API_KEY",
        required: true,
        builtin: false,
        hasExampleValue: true,
        exampleValue: "sk-...",
        references: [
          { file: ".env", line: 1 },
          { file: ".env.example", line: 1 },
          { file: "main.py", line: 2 },
        ],
      },
      { name: "PORT", required: false, builtin: true, hasExampleValue: false, references: [{ file: "main.py", line: 3 }] },
    ]);
    expect(JSON.stringify(result)).not.toContain("sk-real-canary");
    expect(readdirSync(scratch)).toEqual([]);
  });

  test("a hostile ZIP is refused with the archive's code and leaves no temp dir", async () => {
    const root = tempDir();
    const zipFile = join(root, "upload.zip");
    writeFileSync(zipFile, makeZip([{ name: "app.js", data: "process.env.X" }, { name: "../../escape.js", data: "x" }]));
    const scratch = join(root, "scratch");
    mkdirSync(scratch);
    const error = await inspectEnvInZip(zipFile, limits, scratch).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("ARCHIVE_PATH_TRAVERSAL");
    expect(readdirSync(scratch)).toEqual([]);
    expect(readdirSync(root).sort()).toEqual(["scratch", "upload.zip"]);
  });
});
