// The checks of an image deploy that need no engine: the request's fields (reference, registry,
// user), the platform's labels, the registry host of credentials, and the engine's messages as
// the tenant reads them (never with the password).
import { describe, expect, test } from "bun:test";
import { imageDeployInput } from "../../../src/apps/images/deploy";
import { platformLabelsOf } from "../../../src/apps/images/container";
import { checkRegistryHost, registryMessage } from "../../../src/registries/service";
import { ApiError } from "../../../src/http/errors";

const LISTED = ["registry.example.test:5000"];
const fields = (extra: Record<string, unknown>) => ({ name: "web", memoryMB: 64, ...extra });

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof ApiError ? error.code : "not an ApiError";
  }
}

describe("imageDeployInput", () => {
  test("takes a public or listed image, by tag or digest, with the usual app fields", () => {
    expect(imageDeployInput(fields({ image: "ghcr.io/owner/app:1.4", exposePort: "8080" }), LISTED)).toMatchObject({ image: "ghcr.io/owner/app:1.4", exposePort: 8080 });
    // Left out: a redeploy keeps the app's user; "" or null: the image's own USER.
    expect(imageDeployInput(fields({ image: "nginx" }), LISTED).user).toBeUndefined();
    expect(imageDeployInput(fields({ image: "nginx", user: "" }), LISTED).user).toBeNull();
    expect(imageDeployInput(fields({ image: `registry.example.test:5000/team/app@sha256:${"a".repeat(64)}`, user: "1000:1000" }), LISTED).user).toBe("1000:1000");
    expect(imageDeployInput(fields({ image: "nginx", user: "www-data" }), LISTED).user).toBe("www-data");
  });

  test("`user`: a uid or name with a gid or group, as Docker takes them; a JSON number as its text; ids up to 4294967295", () => {
    for (const user of ["1000:staff", "app:1000", "4294967295", "0:4294967295"]) expect(imageDeployInput(fields({ image: "nginx", user }), LISTED).user).toBe(user);
    expect(imageDeployInput(fields({ image: "nginx", user: 1000 }), LISTED).user).toBe("1000");
    for (const user of ["4294967296", "1000:9999999999", 1.5, -1]) expect(codeOf(() => imageDeployInput(fields({ image: "nginx", user }), LISTED))).toBe("VALIDATION_FAILED");
  });

  test.each([
    [{}, "VALIDATION_FAILED"],
    [{ image: "ghcr.io/Owner/app:1" }, "VALIDATION_FAILED"],
    [{ image: `ghcr.io/owner/app:${"t".repeat(129)}` }, "VALIDATION_FAILED"],
    [{ image: "ghcr.io/owner/app:1", runtime: "node" }, "VALIDATION_FAILED"],
    [{ image: "ghcr.io/owner/app:1", user: "root;id" }, "VALIDATION_FAILED"],
    [{ image: "ghcr.io/owner/app:1", user: "0:0:0" }, "VALIDATION_FAILED"],
    [{ image: "other.example.test/app:1" }, "IMAGE_NOT_ALLOWED"],
    [{ image: "10.0.0.5:5000/app:1" }, "IMAGE_NOT_ALLOWED"],
    [{ image: "localhost:5000/app:1" }, "IMAGE_NOT_ALLOWED"],
    [{ image: `sha256:${"b".repeat(64)}` }, "IMAGE_NOT_ALLOWED"],
    [{ image: "ghcr.io/owner/app:$TAG" }, "VALIDATION_FAILED"],
  ])("%j -> %s", (extra, code) => {
    expect(codeOf(() => imageDeployInput(fields(extra), LISTED))).toBe(code);
  });
});

test("platformLabelsOf names the labels in the platform's namespace only", () => {
  expect(platformLabelsOf({ "platform.managed": "true", "org.opencontainers.image.title": "x", "platformish": "y", "platform.app": "a" }).toSorted()).toEqual(["platform.app", "platform.managed"]);
});

describe("checkRegistryHost", () => {
  test("a public or listed host, lowercased", () => {
    expect(checkRegistryHost("GHCR.io", LISTED)).toBe("ghcr.io");
    expect(checkRegistryHost("registry.example.test:5000", LISTED)).toBe("registry.example.test:5000");
  });
  test.each([["ghcr.io/owner", "VALIDATION_FAILED"], ["https://ghcr.io", "VALIDATION_FAILED"], ["unlisted.example.test", "IMAGE_NOT_ALLOWED"], ["127.0.0.1:5000", "IMAGE_NOT_ALLOWED"]])("%s -> %s", (host, code) => {
    expect(codeOf(() => checkRegistryHost(host, LISTED))).toBe(code);
  });
});

test("registryMessage: the engine's first line, cut short, the password masked", () => {
  const message = registryMessage(new Error(`docker pull x failed: login with s3cret-pass refused\nsecond line`), "s3cret-pass");
  expect(message).toBe("login with **** refused");
  expect(registryMessage(new Error("x".repeat(1000)), "")).toHaveLength(301);
});
