// The body of POST /api/apps/deploy-from-repo: which repository references are accepted as the
// user typed them, which are refused (anything that could act as a git option or leave the
// clone's folder), and the same body sent as JSON, a URL-encoded form or a multipart form.
import { describe, expect, test } from "bun:test";
import { repositoryDeployInput } from "../../../src/apps/repository/reference";
import { readFields, type Fields } from "../../../src/apps/files/bodies";

const repository = { id: "R_1", owner: "octo-org", name: "repo", branch: "main" };
const deployFields = { name: "web", runtime: "node", memoryMB: 128 };

function deployWith(repositoryOverrides: Record<string, unknown>, extra: Fields = {}) {
  return repositoryDeployInput({ ...deployFields, repository: { ...repository, ...repositoryOverrides }, ...extra });
}

function refusedNaming(field: string, run: () => unknown) {
  expect(run).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED", status: 400, message: expect.stringContaining(`'${field}'`) }));
}

function formRequest(body: URLSearchParams | FormData) {
  return new Request("http://127.0.0.1/api/apps/deploy-from-repo", { method: "POST", body });
}

describe("accepted references", () => {
  test("a typical JSON body gives the reference and the app's settings", () => {
    const input = deployWith({ path: "apps/web", repoHostInstallationId: "4242" }, { autoDeploy: true, accessToken: "ghp_token123" });
    expect(input.repository).toEqual({ id: "R_1", owner: "octo-org", name: "repo", branch: "main", path: "apps/web", repoHostInstallationId: "4242" });
    expect(input).toMatchObject({ name: "web", runtime: "node", memoryMB: 128, autoDeploy: true, accessToken: "ghp_token123" });
  });

  for (const owner of ["octo-org", "a.b_c", "group/sub", "Octo9"]) {
    test(`owner '${owner}'`, () => expect(deployWith({ owner }).repository.owner).toBe(owner));
  }

  for (const [name, stored] of [["repo", "repo"], [".github", ".github"], ["repo.git", "repo"], ["my_repo-2.0", "my_repo-2.0"]]) {
    test(`name '${name}' is kept as '${stored}'`, () => expect(deployWith({ name }).repository.name).toBe(stored!));
  }

  for (const branch of ["main", "feature/x-1", "release/2.0", "v1.2.3", "user@host"]) {
    test(`branch '${branch}'`, () => expect(deployWith({ branch }).repository.branch).toBe(branch));
  }

  for (const [path, stored] of [["apps/web", "apps/web"], ["apps/web/", "apps/web"], ["./apps/web", "apps/web"], ["/apps/web", "apps/web"], ["", ""], ["/", ""], [".", ""], ["./", ""], [".config/app", ".config/app"]]) {
    test(`path '${path}' is kept as '${stored}'`, () => expect(deployWith({ path }).repository.path).toBe(stored!));
  }

  test("a missing path is the repository's top", () => {
    expect(deployWith({}).repository.path).toBe("");
  });

  test("id as a JSON number or string, installation id as number or digits", () => {
    expect(deployWith({ id: 123456 }).repository.id).toBe("123456");
    expect(deployWith({ id: "123456" }).repository.id).toBe("123456");
    expect(deployWith({ repoHostInstallationId: 99 }).repository.repoHostInstallationId).toBe("99");
    expect(deployWith({ repoHostInstallationId: "99" }).repository.repoHostInstallationId).toBe("99");
    expect(deployWith({}).repository).not.toHaveProperty("repoHostInstallationId");
  });

  test("repository as JSON text", () => {
    const input = repositoryDeployInput({ ...deployFields, repository: JSON.stringify({ ...repository, path: "svc" }) });
    expect(input.repository).toEqual({ ...repository, path: "svc" });
  });

  test("volumes as a JSON array or as JSON text, and the release strategy", () => {
    const volumes = [{ name: "data", mountPath: "/app/data" }];
    expect(deployWith({}, { volumes, releaseStrategy: "start-first" })).toMatchObject({ volumes, releaseStrategy: "start-first" });
    expect(deployWith({}, { volumes: JSON.stringify(volumes) }).volumes).toEqual(volumes);
    expect(deployWith({}).volumes).toBeUndefined();
  });

  test("an empty accessToken is kept (it removes a stored one)", () => {
    expect(deployWith({}, { accessToken: "" }).accessToken).toBe("");
    expect(deployWith({}).accessToken).toBeUndefined();
  });
});

describe("refused references name the field", () => {
  const longBranch = "b".repeat(256);
  for (const [what, branch] of [
    ["an option (--upload-pack)", "--upload-pack=touch /tmp/x"],
    ["a short option", "-b"],
    ["'..'", "a..b"],
    ["a space", "a b"],
    ["a '.lock' part", "x.lock"],
    ["a '.lock' part inside", "feature/x.lock/y"],
    ["'@{'", "@{u}"],
    ["'@' alone", "@"],
    ["'//'", "a//b"],
    ["a leading '/'", "/main"],
    ["a trailing '/'", "main/"],
    ["a trailing '.'", "main."],
    ["a part starting with '.'", "feature/.hidden"],
    ["a tab", "a\tb"],
    ["a line feed", "main\nx"],
    ["a NUL", "main\0"],
    ["DEL", "main\x7f"],
    ["'~'", "main~1"],
    ["'^'", "main^"],
    ["':'", "a:b"],
    ["'?'", "a?"],
    ["'*'", "a*"],
    ["'['", "a[b"],
    ["a backslash", "a\\b"],
    ["256 characters", longBranch],
  ]) {
    test(`branch with ${what}`, () => refusedNaming("repository.branch", () => deployWith({ branch })));
  }

  test("a branch of 255 characters is still accepted", () => {
    expect(deployWith({ branch: "b".repeat(255) }).repository.branch).toHaveLength(255);
  });

  for (const owner of ["-x", "../x", "a/../b", "..", ".x", "a/", "/a", "a b", "a\\b", "o\0", "a:b"]) {
    test(`owner ${JSON.stringify(owner)}`, () => refusedNaming("repository.owner", () => deployWith({ owner })));
  }

  for (const name of ["..", ".", ".git", "a/b", "--config", "-x", "a b", "repo\n", "a".repeat(101)]) {
    test(`name ${JSON.stringify(name)}`, () => refusedNaming("repository.name", () => deployWith({ name })));
  }

  for (const path of ["../x", "a/../../b", "..", "a/..", "./../x", "a/./b", "a//b", "a\\b", "..\\x", "a\0b", "a\nb", "p".repeat(1025)]) {
    test(`path ${JSON.stringify(path)}`, () => refusedNaming("repository.path", () => deployWith({ path })));
  }

  for (const repoHostInstallationId of ["12a", "-1", "1.5", " 12", "9".repeat(21)]) {
    test(`installation id ${JSON.stringify(repoHostInstallationId)}`, () =>
      refusedNaming("repository.repoHostInstallationId", () => deployWith({ repoHostInstallationId })));
  }

  test("an id with a control character", () => refusedNaming("repository.id", () => deployWith({ id: "R\n1" })));

  for (const field of ["id", "owner", "name", "branch"]) {
    test(`missing or empty ${field}`, () => {
      refusedNaming(`repository.${field}`, () => deployWith({ [field]: undefined }));
      refusedNaming(`repository.${field}`, () => deployWith({ [field]: "" }));
    });
  }

  for (const field of ["owner", "name", "branch", "path"]) {
    test(`${field} that is not a string`, () => refusedNaming(`repository.${field}`, () => deployWith({ [field]: ["main"] })));
  }

  test("no repository at all", () => refusedNaming("repository", () => repositoryDeployInput({ ...deployFields })));

  for (const [what, value] of [
    ["a number", 5],
    ["an array", [repository]],
    ["null", null],
    ["bad JSON text", "{owner: octo}"],
    ["JSON text of an array", "[]"],
    ["JSON text of a string", '"octo-org/repo"'],
  ] as const) {
    test(`repository as ${what}`, () => refusedNaming("repository", () => repositoryDeployInput({ ...deployFields, repository: value })));
  }

  for (const [what, accessToken] of [
    ["a space", "ghp_abc def"],
    ["a line feed", "ghp_abc\n"],
    ["a number", 12345],
    ["1025 characters", "t".repeat(1025)],
  ] as const) {
    test(`accessToken with ${what}`, () => refusedNaming("accessToken", () => deployWith({}, { accessToken })));
  }

  test("autoDeploy that is not a boolean", () => refusedNaming("autoDeploy", () => deployWith({}, { autoDeploy: "sometimes" })));

  test("the app's own fields are still checked", () => {
    refusedNaming("name", () => repositoryDeployInput({ runtime: "node", memoryMB: 128, repository }));
    refusedNaming("memoryMB", () => repositoryDeployInput({ name: "web", runtime: "node", repository }));
    refusedNaming("runtime", () => repositoryDeployInput({ name: "web", runtime: "ruby", memoryMB: 128, repository }));
    expect(() => deployWith({}, { envVars: [1, 2] })).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED", message: expect.stringContaining("envVars") }));
  });
});

describe("form bodies", () => {
  const repositoryForm = (style: "brackets" | "dots") =>
    Object.entries({ ...repository, path: "apps/web/" }).map(([key, value]) => [style === "brackets" ? `repository[${key}]` : `repository.${key}`, value]);

  for (const style of ["brackets", "dots"] as const) {
    test(`repository as ${style === "brackets" ? "repository[owner]" : "repository.owner"} fields of a URL-encoded form`, async () => {
      const body = new URLSearchParams([...repositoryForm(style), ["name", "web"], ["runtime", "node"], ["memoryMB", "128"], ["autoDeploy", "true"]]);
      const input = repositoryDeployInput(await readFields(formRequest(body)));
      expect(input.repository).toEqual({ ...repository, path: "apps/web" });
      expect(input).toMatchObject({ name: "web", memoryMB: 128, autoDeploy: true });
    });
  }

  test("a multipart form with repository as JSON text, numbers as text and envVars as JSON text", async () => {
    const form = new FormData();
    form.set("name", "web");
    form.set("runtime", "bun");
    form.set("memoryMB", "256");
    form.set("exposePort", "8080");
    form.set("autoDeploy", "false");
    form.set("envVars", JSON.stringify({ API_URL: "https://example.test", DEBUG: "1" }));
    form.set("repository", JSON.stringify({ ...repository, id: 77, repoHostInstallationId: 5 }));
    const input = repositoryDeployInput(await readFields(formRequest(form)));
    expect(input).toMatchObject({ name: "web", runtime: "bun", memoryMB: 256, exposePort: 8080, autoDeploy: false, envVars: { API_URL: "https://example.test", DEBUG: "1" } });
    expect(input.repository).toEqual({ ...repository, id: "77", path: "", repoHostInstallationId: "5" });
  });

  test("the form's repository fields are checked like JSON ones", async () => {
    const body = new URLSearchParams([...repositoryForm("brackets"), ["name", "web"], ["runtime", "node"], ["memoryMB", "128"]]);
    body.set("repository[branch]", "--upload-pack=touch /tmp/x");
    const fields = await readFields(formRequest(body));
    refusedNaming("repository.branch", () => repositoryDeployInput(fields));
  });

  test("no repository fields in a form", async () => {
    const body = new URLSearchParams([["name", "web"], ["runtime", "node"], ["memoryMB", "128"], ["repositoryOwner", "octo-org"]]);
    const fields = await readFields(formRequest(body));
    refusedNaming("repository", () => repositoryDeployInput(fields));
  });

  test("memoryMB as text out of range, autoDeploy neither true nor false", () => {
    refusedNaming("memoryMB", () => repositoryDeployInput({ ...deployFields, memoryMB: "12", repository }));
    refusedNaming("autoDeploy", () => repositoryDeployInput({ ...deployFields, autoDeploy: "yes please", repository }));
  });

  test("envVars as an object in JSON and as JSON text in a form give the same variables", () => {
    const envVars = { NODE_ENV: "production" };
    expect(deployWith({}, { envVars }).envVars).toEqual(envVars);
    expect(deployWith({}, { envVars: JSON.stringify(envVars) }).envVars).toEqual(envVars);
    expect(() => deployWith({}, { envVars: "{not json" })).toThrow(expect.objectContaining({ code: "VALIDATION_FAILED", message: expect.stringContaining("envVars") }));
  });
});
