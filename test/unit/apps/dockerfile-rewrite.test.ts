// What a Dockerfile may say and what the engine gets instead: the platform's re-emission of it
// (one instruction a line, no directive, continuation or comment, images pinned by ID), the lines
// it refuses, and the checks on the images it names (reference, registry host, ONBUILD, labels).
import { describe, expect, test } from "bun:test";
import { imageReferenceRefusal, parseImageReference, pinImage, registryAddressRefusal, registryPullRefusal, type HostLookup } from "../../../src/apps/dockerfile-images";
import { rewriteDockerfile } from "../../../src/apps/dockerfile-rewrite";
import { DockerNotFound, type DockerDriver } from "../../../src/docker/driver";
import type { ImageConfig, RegistryAuth } from "../../../src/docker/images";
import { loadConfig } from "../../../src/config";

const pinAll = (reference: string) => `sha256:${reference.length.toString(16).padStart(64, "0")}`;
const emitted = (text: string) => {
  const rewrite = rewriteDockerfile(text);
  expect(rewrite.refusals).toEqual([]);
  return rewrite.render(pinAll);
};
const refusals = (text: string) => rewriteDockerfile(text).refusals;
const refusal = (text: string) => {
  const [first] = refusals(text);
  if (!first) throw new Error(`accepted: ${JSON.stringify(text)}`);
  return first;
};
const BY_ID = "names an image by its ID: name a base image by repository and tag, or an earlier stage by its name";
const REMOTE = "use RUN curl/wget, which runs on the workspace network";
const BASE = "FROM platform-test/node:latest\n";
const NODE_ID = pinAll("platform-test/node:latest");

describe("the Dockerfile the engine builds", () => {
  test("one instruction a line: continuations joined, comments, blank lines and directives gone, ADD/COPY in the JSON form, images by ID", () => {
    const text = [
      "# syntax=docker/dockerfile:1",
      "# escape=\\",
      "ARG VERSION=1",
      "FROM --platform=$BUILDPLATFORM platform-test/node:latest AS Build",
      "RUN echo one \\",
      "# a comment inside",
      "",
      "    && echo two",
      "COPY --chown=1000:1000 src/ 'a.txt' /srv/",
      'ADD ["local.tar.gz", "/x/"]',
      "FROM platform-test/node:latest",
      "COPY --from=build /out /out",
      "COPY --from=0 /out /again",
      "COPY --from=platform-test/python:latest /usr/bin/python3 /usr/bin/",
      'CMD ["node", "serve.mjs"]',
    ].join("\r\n");
    const rewrite = rewriteDockerfile(text);
    expect(rewrite.refusals).toEqual([]);
    expect([...rewrite.images.keys()]).toEqual(["platform-test/node:latest", "platform-test/python:latest"]);
    expect(rewrite.notes).toEqual(["    --platform=$BUILDPLATFORM is not used: a base image is the one on the engine, pinned by its ID"]);
    expect(rewrite.render(pinAll)).toBe(
      [
        "ARG VERSION=1",
        `FROM ${NODE_ID} AS build`,
        "RUN echo one     && echo two",
        'COPY --chown=1000:1000 ["src/","a.txt","/srv/"]',
        'ADD ["local.tar.gz","/x/"]',
        `FROM ${NODE_ID}`,
        'COPY --from=0 ["/out","/out"]',
        'COPY --from=0 ["/out","/again"]',
        `COPY --from=${pinAll("platform-test/python:latest")} ["/usr/bin/python3","/usr/bin/"]`,
        'CMD ["node", "serve.mjs"]',
        "",
      ].join("\n"),
    );
  });

  test("`# escape=`` continues lines with a backtick, and its words are resolved before they are emitted", () => {
    expect(emitted("# escape=`\nFROM platform-test/node:latest\nRUN echo a `\n  b\nCOPY fi`le.txt /x/\nRUN echo C:\\dir\n")).toBe(
      `FROM ${NODE_ID}\nRUN echo a   b\nCOPY ["file.txt","/x/"]\nRUN echo C:\\dir\n`,
    );
    // The engine resolves escapes in these with the file's escape character; the emitted file has the default one.
    expect(refusal("# escape=`\nFROM platform-test/node:latest\nENV DIR=C:\\dir\n")).toEndWith("has a \\ or a backtick under `# escape=``: write it without them");
    expect(refusal("# escape=`\nFROM platform-test/node:latest\nCOPY C:\\dir\\ /x/\n")).toEndWith("has a path with a quote, a backslash or a control character in it: rename the file");
  });

  test("scratch, stages by name (any case) and COPY --from by index; a stage name is one only once defined", () => {
    expect(emitted("FROM platform-test/node:latest AS Cafe\nFROM cafe\nFROM scratch\nCOPY --from=CAFE /a /b\nCOPY --from=1 /a /c\n")).toBe(
      `FROM ${NODE_ID} AS cafe\nFROM cafe\nFROM scratch\nCOPY --from=0 ["/a","/b"]\nCOPY --from=1 ["/a","/c"]\n`,
    );
    expect(refusal("FROM platform-test/node:latest AS dead\nCOPY --from=dead /a /b\n")).toEndWith(BY_ID);
    expect(refusal("FROM cafe\nFROM platform-test/node:latest AS cafe\n")).toEndWith(BY_ID);
    expect(refusal(`${BASE}COPY --from=1 /a /b\n`)).toEndWith("names a stage that does not come before it");
    // A number names a stage in COPY --from only: FROM takes it for an image ID prefix.
    expect(refusal(`${BASE}${BASE}FROM 01\n`)).toBe(`the Dockerfile's line "FROM 01" ${BY_ID}`);
    expect(refusal(`${BASE.trim()} AS a\nFROM platform-test/node:latest AS A\n`)).toEndWith("names a stage that an earlier stage is already named");
    expect(refusal(`${BASE.trim()} AS Scratch\n`)).toEndWith("names its stage scratch, the empty image's name");
  });
});

describe("lines that are refused, quoted in the message", () => {
  test("recipe: `# escape<U+00A0>=`` is no directive to the engine, so a trailing backtick hides nothing", () => {
    const text = `# escape\u00a0=\`\n${BASE}RUN echo hidden \`\nADD http://127.0.0.1:9999/x /p\nRUN cat /p\n`;
    expect(refusals(text)).toEqual([`the Dockerfile's line "ADD http://127.0.0.1:9999/x /p" fetches a remote source: the engine would fetch it from the platform's own network; ${REMOTE}`]);
  });

  test("recipe: a line ending in two escape characters, which engines continue or not", () => {
    expect(refusals(`${BASE}RUN true \\\\\nADD http://127.0.0.1:9999/x /p\nRUN cat /p\n`)).toEqual([
      `the Dockerfile's line "RUN true \\\\" ends in two escape characters (\\\\): engines differ on whether that continues it; end it with one to go on, or with none`,
      `the Dockerfile's line "ADD http://127.0.0.1:9999/x /p" fetches a remote source: the engine would fetch it from the platform's own network; ${REMOTE}`,
    ]);
  });

  test("no emitted line ends in a backslash, whatever the escape character", () => {
    expect(emitted(`${BASE}RUN echo done \\`)).toBe(`FROM ${NODE_ID}\nRUN echo done\n`);
    expect(refusal(`# escape=\`\n${BASE}RUN echo done \\\n`)).toEndWith("ends in a backslash: nothing follows it to continue");
  });

  test("ONBUILD, unknown instructions, flags no instruction takes, and control characters", () => {
    expect(refusal(`${BASE}ONBUILD RUN echo later\n`)).toBe(
      `the Dockerfile's line "ONBUILD RUN echo later" is refused: ONBUILD instructions would run unchecked in later builds; write them in the stage that needs them`,
    );
    expect(refusal(`${BASE}FETCH http://x\n`)).toEndWith("is not a Dockerfile instruction the platform builds");
    expect(refusal(`${BASE}RUN --network=host curl x\n`)).toEndWith("has a flag: RUN takes none with the engine's classic builder");
    expect(refusal(`${BASE}COPY --link /a /b\n`)).toEndWith("has the flag --link, which is not --name=value");
    expect(refusal(`${BASE}ADD --from=x /a /b\n`)).toEndWith("has the flag --from, which ADD does not take here");
    expect(refusal(`${BASE}RUN echo a\rADD http://x /p\n`)).toEndWith("has a control character in it");
    expect(refusal(`\u00a0${BASE}`)).toEndWith("is not an instruction (a keyword, then its arguments)");
    expect(refusal("# only a comment\n")).toBe("the Dockerfile has no FROM instruction");
  });

  test("ADD of a URL, a git repository or a variable: the engine would fetch it from the host's network", () => {
    expect(refusal(`${BASE}ADD http://127.0.0.1/x /x\n`)).toBe(`the Dockerfile's line "ADD http://127.0.0.1/x /x" fetches a remote source: the engine would fetch it from the platform's own network; ${REMOTE}`);
    expect(refusal(`${BASE}add git@host:r.git /r\n`)).toContain("fetches a remote source");
    expect(refusal(`${BASE}ADD $URL /x\n`)).toBe(`the Dockerfile's line "ADD $URL /x" names its source through a variable, which could make it a URL: the engine would fetch it from the platform's own network; ${REMOTE}`);
    expect(refusal(`${BASE}ADD --chown=1000 local.txt http:\\/\\/127.0.0.1/x /x\n`)).toContain("fetches a remote source");
    expect(refusal(`${BASE}ADD --chown=1000 local.txt "http:\\/\\/127.0.0.1/x" /x\n`)).toContain("has a path with a quote, a backslash");
    expect(refusal(`${BASE}ADD ["\\u0024URL", "/x"]\n`)).toContain("through a variable");
    expect(refusal(`${BASE}ADD ["http:\\\\/\\\\/127.0.0.1/latest", "/x"]\n`)).toContain("fetches a remote source");
    expect(refusal(`${BASE}ADD h\\ttp://127.0.0.1/x /x\n`)).toContain("fetches a remote source");
    expect(refusal(`${BASE}COPY https://example.test/x /x\n`)).toContain("fetches a remote source");
    expect(refusal(`${BASE}COPY "it's.txt" /x\n`)).toEndWith("has a path with a quote, a backslash or a control character in it: rename the file");
  });

  test("an image ID or a prefix of one, in FROM or COPY --from, however it is spelled", () => {
    expect(refusal("FROM 74ca\n")).toBe(`the Dockerfile's line "FROM 74ca" ${BY_ID}`);
    expect(refusal(`FROM sha256:${"ab12".repeat(16)}\n`)).toEndWith(BY_ID);
    expect(refusal("from 74ca:latest AS base\n")).toEndWith(BY_ID);
    expect(refusal(`${BASE}COPY --from=deadbeef /a /b\n`)).toBe(`the Dockerfile's line "COPY --from=deadbeef /a /b" ${BY_ID}`);
    expect(refusal("FROM \\\n 74ca\n")).toBe(`the Dockerfile's line "FROM 74ca" ${BY_ID}`);
    expect(refusal(`${BASE}COPY \\\n# a comment\n\n  --from=74ca /a /b\n`)).toEndWith(BY_ID);
    expect(refusal(`${BASE}COPY --"from"=7\\4ca /a /b\n`)).toEndWith(BY_ID);
  });

  test("variables, quotes and escapes in an image reference, and the platform's own images", () => {
    expect(refusal("ARG BASE=platform-test/node:latest\nFROM $BASE\n")).toBe(`the Dockerfile's line "FROM $BASE" names an image through a variable: write the image's name itself`);
    expect(refusal('FROM "74ca"\n')).toEndWith("names an image with quotes or escapes: write the image's name plainly");
    expect(refusal(`${BASE}COPY --from=$STAGE /a /b\n`)).toContain("through a variable");
    const platformMade = "names an image of the platform's apps: start from a base image instead";
    expect(refusal("FROM registry.example:5000/team/PLATFORM-BUILD-app_x:bld_y\n")).toEndWith(platformMade);
    expect(refusal(`${BASE}COPY --from=docker.io/library/platform-app-app_x:bld_y /app /app\n`)).toEndWith(platformMade);
  });
});

test("a Dockerfile of the largest size, shaped to be slow, is read in linear time", () => {
  const size = 128 * 1024;
  const shapes = [
    Array.from({ length: size / 40 }, (_, index) => `FROM platform-test/node:latest AS s${index}\nCOPY --from=s0 a b`).join("\n"),
    `FROM x\nRUN${" ".repeat(size)}\u2028x`,
    `#a=b${" ".repeat(size)}c\nFROM x`,
    `FROM x\nRUN x${" ".repeat(size)}y`,
    `FROM a/${"a_".repeat(size / 2)}_`,
    `FROM x\nCOPY ${"--a=b ".repeat(size / 6)} /b`,
    `FROM x\n${"RUN a \\\n".repeat(size / 8)}`,
  ];
  for (const text of shapes) {
    const start = performance.now();
    rewriteDockerfile(text).render(pinAll);
    expect(performance.now() - start).toBeLessThan(500);
  }
});

describe("image references", () => {
  test("a registry is named by a public host name: no IP literal, no localhost", () => {
    expect(imageReferenceRefusal("169.254.169.254/x", [])).toBe("names the registry 169.254.169.254 by its IP address: registries are named by host name");
    for (const reference of ["127.0.0.1:5000/x", "127.1/x", "2130706433:80/x", "10.0.0.1/team/x:1", "0x7f.1/x"]) expect(imageReferenceRefusal(reference, [])).toContain("by its IP address");
    expect(imageReferenceRefusal("[::1]:5000/x", [])).toBe("names a registry by its IPv6 address: registries are named by host name");
    expect(imageReferenceRefusal("localhost:5000/x", [])).toContain("on the platform's own machine");
    expect(imageReferenceRefusal("registry.localhost/x", [])).toContain("on the platform's own machine");
    expect(imageReferenceRefusal("registry.example:5000/team/x:1", [])).toBeUndefined();
    expect(imageReferenceRefusal("team/X", [])).toBe("is not a valid image reference");
  });

  test("the name the engine lists for the image a reference names", () => {
    expect(parseImageReference("busybox")).toEqual({ registry: "docker.io", engineName: "busybox:latest" });
    expect(parseImageReference("docker.io/library/busybox:1.36")).toEqual({ registry: "docker.io", engineName: "busybox:1.36" });
    expect(parseImageReference("index.docker.io/team/app")).toEqual({ registry: "docker.io", engineName: "team/app:latest" });
    expect(parseImageReference("platform-test/node:latest")).toEqual({ registry: "docker.io", engineName: "platform-test/node:latest" });
    const digest = `sha256:${"a".repeat(64)}`;
    expect(parseImageReference(`registry.example:5000/x:1@${digest}`)).toEqual({ registry: "registry.example:5000", engineName: `registry.example:5000/x@${digest}` });
  });

  test("builds pull only from the public registries and those the administrator lists (PLATFORM_BUILD_REGISTRIES)", () => {
    const pullRefusal = (reference: string, registries: string[] = []) => {
      const parsed = parseImageReference(reference);
      if (typeof parsed === "string") throw new Error(`${reference} ${parsed}`);
      return registryPullRefusal(parsed.registry, registries);
    };
    const publicOnes = ["node:20", "library/node:20", "docker.io/library/node:20", "index.docker.io/team/app", "registry-1.docker.io/library/node:20", "ghcr.io/team/app:1"];
    publicOnes.push("quay.io/team/app", "gcr.io/distroless/static", "registry.gitlab.com/team/app", "public.ecr.aws/team/app", "mcr.microsoft.com/dotnet/runtime:8.0", "GHCR.io/team/app");
    for (const reference of publicOnes) expect(pullRefusal(reference)).toBeUndefined();
    expect(pullRefusal("registry.example:5000/team/x:1", ["registry.example:5000"])).toBeUndefined();
    expect(pullRefusal("10.0.0.5:5000/team/x:1", ["10.0.0.5:5000"])).toBeUndefined();
    expect(pullRefusal("registry.test-tenant.example/x")).toBe(
      "names the registry registry.test-tenant.example, which builds do not pull from: only docker.io, registry-1.docker.io, ghcr.io, quay.io, gcr.io, " +
        "registry.gitlab.com, public.ecr.aws, mcr.microsoft.com and the registries listed in PLATFORM_BUILD_REGISTRIES",
    );
    for (const [reference, registries] of [
      ["registry.example:5000/team/x:1", ["registry.example"]],
      ["registry.example/team/x:1", ["registry.example:5000"]],
      ["ghcr.io:8443/team/x", []],
      ["ghcr.io.evil.example/team/x", []],
      ["evil.example/ghcr.io/x", []],
      ["docker.io.evil.example/library/node:20", []],
    ] as const) {
      expect(pullRefusal(reference, [...registries])).toContain("which builds do not pull from");
    }
  });

  test("before a pull, the registry's name must resolve, to public addresses only", async () => {
    const resolvesTo = (...addresses: string[]): HostLookup => async () => addresses;
    expect(await registryAddressRefusal("registry.example", resolvesTo("10.0.0.5"), [])).toBe(
      "names the registry registry.example, which resolves to 10.0.0.5: not a public address, which the engine would reach from the platform's own network",
    );
    expect(await registryAddressRefusal("registry.example:5000", resolvesTo("203.0.114.1", "fd00::1"), [])).toContain("resolves to fd00::1");
    expect(await registryAddressRefusal("registry.example", resolvesTo("169.254.169.254"), [])).toContain("resolves to 169.254.169.254");
    expect(await registryAddressRefusal("registry.example", async () => Promise.reject(new Error("ENOTFOUND")), [])).toBe("names the registry registry.example, whose name does not resolve (ENOTFOUND)");
    expect(await registryAddressRefusal("registry.example", resolvesTo("203.0.114.1", "2a00:1450::1"), [])).toBeUndefined();
    expect(await registryAddressRefusal("docker.io", resolvesTo("127.0.0.1"), [])).toBeUndefined();
  });
});

describe("pinning an image", () => {
  const image = (changes: Partial<ImageConfig> = {}): ImageConfig => ({
    id: `sha256:${"c".repeat(64)}`,
    names: ["ghcr.io/team/base:1"],
    onBuild: [],
    labels: {},
    user: "",
    exposedPorts: [],
    volumes: [],
    sizeBytes: 0,
    ...changes,
  });
  /** A driver whose engine holds `present` (by any reference) and whose pulls give `pulled` or fail. */
  const driver = (present: ImageConfig | undefined, pulled?: ImageConfig) => {
    const calls: string[] = [];
    let held = present;
    const fake = {
      inspectImage: async (reference: string) => {
        calls.push(`inspect ${reference}`);
        if (!held) throw new DockerNotFound(`inspect image ${reference}: not found`);
        return held;
      },
      pullImage: async (reference: string, pullOptions: { auth?: { username: string } }) => {
        calls.push(`pull ${reference}${pullOptions.auth ? ` as ${pullOptions.auth.username}` : ""}`);
        if (!pulled) throw new Error(`docker pull ${reference} failed: manifest unknown`);
        held = pulled;
      },
    };
    return { calls, driver: fake as unknown as DockerDriver };
  };
  const options = (addresses: string[] = ["203.0.114.1"], registries: string[] = [], authFor = (_registry: string): RegistryAuth | undefined => undefined) => ({
    lookup: async () => addresses,
    registries,
    authFor,
    log: () => {},
    signal: new AbortController().signal,
  });
  const REFERENCE = "ghcr.io/team/base:1";

  test("an image of a public registry on the engine, by a name it holds: its full ID, nothing pulled", async () => {
    const engine = driver(image());
    expect(await pinImage(engine.driver, REFERENCE, options())).toEqual({ id: `sha256:${"c".repeat(64)}` });
    expect(engine.calls).toEqual([`inspect ${REFERENCE}`]);
  });

  test("a missing image is pulled from a public registry after the registry check; a failed pull is a clear refusal, the engine's first line", async () => {
    const reference = "ghcr.io/team/base:1";
    const pulled = driver(undefined, image({ names: [reference] }));
    expect(await pinImage(pulled.driver, reference, options())).toEqual({ id: `sha256:${"c".repeat(64)}` });
    expect(pulled.calls).toEqual([`inspect ${reference}`, `pull ${reference}`, `inspect ${reference}`]);
    expect(await pinImage(driver(undefined).driver, reference, options())).toEqual({
      refused: `names the image ${reference}, which could not be pulled: docker pull ${reference} failed: manifest unknown`,
    });
    const wordy = { ...driver(undefined).driver, pullImage: async () => Promise.reject(new Error(`${"x".repeat(400)}\nsecond line`)) } as unknown as DockerDriver;
    expect(await pinImage(wordy, reference, options())).toEqual({ refused: `names the image ${reference}, which could not be pulled: ${"x".repeat(300)}…` });
  });

  test("a registry not on the list is never pulled from, nor its name looked up, whatever it resolves to, nor is an image on the engine under its name used", async () => {
    const reference = "registry.example/team/base:1";
    const engine = driver(image({ names: [reference] }), image({ names: [reference] }));
    const lookups: string[] = [];
    const publicAddress = { ...options(), lookup: async (host: string) => (lookups.push(host), ["203.0.114.1"]) };
    expect(await pinImage(engine.driver, reference, publicAddress)).toEqual({ refused: expect.stringContaining("which builds do not pull from") });
    expect(engine.calls).toEqual([]);
    expect(lookups).toEqual([]);
  });

  test("an image of a listed registry is pulled even when its name is on the engine (the engine checks this workspace may read it), with the workspace's credentials", async () => {
    const reference = "registry.example/team/base:1";
    const present = image({ names: [reference] });
    const engine = driver(present);
    expect(await pinImage(engine.driver, reference, options([], ["registry.example"]))).toEqual({
      refused: `names the image ${reference}, which could not be pulled: docker pull ${reference} failed: manifest unknown`,
    });
    expect(engine.calls).toEqual([`pull ${reference}`]);
    const withLogin = driver(present, present);
    const auth = (registry: string) => ({ username: "deployer", password: "secret", serveraddress: registry });
    expect(await pinImage(withLogin.driver, reference, options([], ["registry.example"], auth))).toEqual({ id: `sha256:${"c".repeat(64)}` });
    expect(withLogin.calls).toEqual([`pull ${reference} as deployer`, `inspect ${reference}`]);
  });

  test("a public registry whose name resolves to a private address is never pulled from", async () => {
    const reference = "quay.io/team/base:1";
    const engine = driver(undefined, image({ names: [reference] }));
    expect(await pinImage(engine.driver, reference, options(["192.168.1.20"]))).toEqual({ refused: expect.stringContaining("resolves to 192.168.1.20") });
    expect(engine.calls).toEqual([`inspect ${reference}`]);
  });

  test("a registry the administrator lists (PLATFORM_BUILD_REGISTRIES) is pulled from whatever its address", async () => {
    const reference = "10.0.0.5:5000/team/base:1";
    expect(imageReferenceRefusal(reference, ["10.0.0.5:5000"])).toBeUndefined();
    expect(imageReferenceRefusal(reference, ["10.0.0.5"])).toContain("by its IP address");
    expect(rewriteDockerfile(`FROM ${reference}\n`, ["10.0.0.5:5000"]).refusals).toEqual([]);
    expect(loadConfig({ PLATFORM_BUILD_REGISTRIES: " Registry.Example:5000, 10.0.0.5 ,," }).buildRegistries).toEqual(["registry.example:5000", "10.0.0.5"]);
    expect(() => loadConfig({ PLATFORM_BUILD_REGISTRIES: "https://registry.example" })).toThrow(
      'PLATFORM_BUILD_REGISTRIES must be comma-separated registry hosts (host or host:port), got "https://registry.example"',
    );
    const engine = driver(undefined, image({ names: [reference] }));
    expect(await pinImage(engine.driver, reference, options(["10.0.0.5"], ["10.0.0.5:5000"]))).toEqual({ id: `sha256:${"c".repeat(64)}` });
    expect(engine.calls).toEqual([`pull ${reference}`, `inspect ${reference}`]);
  });

  test("refused: ONBUILD instructions, the platform's label, and a name the engine took for an ID prefix", async () => {
    const onBuild = await pinImage(driver(image({ onBuild: ["ADD http://127.0.0.1:9999/x /p"] })).driver, REFERENCE, options());
    expect(onBuild).toEqual({
      refused: `names the image ${REFERENCE}, which has ONBUILD instructions (ADD http://127.0.0.1:9999/x /p): they would run unchecked in this build; start from an image without them`,
    });
    expect(await pinImage(driver(image({ labels: { "platform.managed": "true" } })).driver, REFERENCE, options())).toEqual({
      refused: "names an image the platform made: start from a base image instead",
    });
    expect(await pinImage(driver(image({ names: ["someone/else:1"] })).driver, "cafe/x", options())).toEqual({
      refused: "names cafe/x, which is no image's name on the engine (the engine would read it as an image ID)",
    });
  });
});
