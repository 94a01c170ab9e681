// The pure checks of an app's volume list: names, mount paths, the number of volumes, overlaps,
// and the `volumes` / `releaseStrategy` form fields.
import { describe, expect, test } from "bun:test";
import {
  checkVolumeMounts,
  MAX_MOUNT_PATH_LENGTH,
  MAX_VOLUMES_PER_APP,
  normalizeMountPath,
  parseReleaseStrategyField,
  parseVolumesField,
} from "../../../src/volumes/validation";
import { errorCodeOf } from "./error-code";

describe("mount paths", () => {
  const zip = { codeAtApp: true };
  const image = { codeAtApp: false };

  test("are normalized: repeated and trailing slashes dropped", () => {
    expect(normalizeMountPath("/app/data", zip)).toBe("/app/data");
    expect(normalizeMountPath("//var///lib/app/", zip)).toBe("/var/lib/app");
  });

  test("must be absolute, without . or .., of tame characters, and bounded", () => {
    for (const path of ["data", "", "./data", "/data/../etc", "/data/./x", "/data/a b", "/data/x:y", "/data/x,y", "/data\\x", `/${"a".repeat(MAX_MOUNT_PATH_LENGTH)}`, "/" + "a/".repeat(40)]) {
      expect([path, errorCodeOf(() => normalizeMountPath(path, zip))]).toEqual([path, "INVALID_MOUNT_PATH"]);
    }
  });

  test("never a file the engine writes into every container", () => {
    for (const path of ["/etc/hosts", "//etc/resolv.conf/", "/etc/hostname"]) {
      expect([path, errorCodeOf(() => normalizeMountPath(path, image))]).toEqual([path, "INVALID_MOUNT_PATH"]);
    }
  });

  test("never the root, the kernel's folders or under them", () => {
    for (const path of ["/", "///", "/proc", "/proc/self", "/sys", "/sys/fs/cgroup", "/dev", "/dev/shm"]) {
      expect([path, errorCodeOf(() => normalizeMountPath(path, image))]).toEqual([path, "INVALID_MOUNT_PATH"]);
    }
    expect(normalizeMountPath("/devices", image)).toBe("/devices");
    expect(normalizeMountPath("/etc/app", image)).toBe("/etc/app");
    expect(normalizeMountPath("/process", image)).toBe("/process");
  });

  test("ZIP and git apps cannot hide their code in /app; image apps may mount there", () => {
    expect(errorCodeOf(() => normalizeMountPath("/app", zip))).toBe("INVALID_MOUNT_PATH");
    expect(errorCodeOf(() => normalizeMountPath("/app/", zip))).toBe("INVALID_MOUNT_PATH");
    expect(normalizeMountPath("/app/data", zip)).toBe("/app/data");
    expect(normalizeMountPath("/application", zip)).toBe("/application");
    expect(normalizeMountPath("/app", image)).toBe("/app");
  });
});

describe("volume lists", () => {
  const options = { codeAtApp: true };

  test("names are lowercase letters, digits and dashes, listed once", () => {
    expect(checkVolumeMounts([{ name: "data-1", mountPath: "/data" }], options)).toEqual([{ name: "data-1", mountPath: "/data" }]);
    for (const name of ["Data", "data_1", "-data", "data-", "", "a".repeat(64), "da ta"]) {
      expect([name, errorCodeOf(() => checkVolumeMounts([{ name, mountPath: "/data" }], options))]).toEqual([name, "INVALID_VOLUME_NAME"]);
    }
    const twice = [{ name: "data", mountPath: "/a" }, { name: "data", mountPath: "/b" }];
    expect(errorCodeOf(() => checkVolumeMounts(twice, options))).toBe("INVALID_VOLUME_NAME");
  });

  test("two volumes never share or nest a path", () => {
    const pairs = [["/data", "/data"], ["/data", "/data/sub"], ["/data/sub", "/data"], ["/data/", "//data"]];
    for (const [first, second] of pairs) {
      const mounts = [{ name: "a", mountPath: first! }, { name: "b", mountPath: second! }];
      expect([first, second, errorCodeOf(() => checkVolumeMounts(mounts, options))]).toEqual([first, second, "MOUNT_PATHS_OVERLAP"]);
    }
    expect(checkVolumeMounts([{ name: "a", mountPath: "/data" }, { name: "b", mountPath: "/database" }], options)).toHaveLength(2);
  });

  test(`at most ${MAX_VOLUMES_PER_APP} per app`, () => {
    const mounts = (count: number) => Array.from({ length: count }, (_, index) => ({ name: `v${index}`, mountPath: `/v${index}` }));
    expect(checkVolumeMounts(mounts(MAX_VOLUMES_PER_APP), options)).toHaveLength(MAX_VOLUMES_PER_APP);
    expect(errorCodeOf(() => checkVolumeMounts(mounts(MAX_VOLUMES_PER_APP + 1), options))).toBe("TOO_MANY_VOLUMES");
  });
});

describe("form fields", () => {
  test("volumes: JSON text of [{name, mountPath}], absent when empty", () => {
    expect(parseVolumesField(undefined)).toBeUndefined();
    expect(parseVolumesField("")).toBeUndefined();
    expect(parseVolumesField("[]")).toEqual([]);
    expect(parseVolumesField('[{"name":"data","mountPath":"/data"}]')).toEqual([{ name: "data", mountPath: "/data" }]);
    for (const text of ["{}", "[1]", '[{"name":"data"}]', '[{"name":"a","mountPath":"/a","extra":1}]', "not json", `[${'{"name":"a","mountPath":"/a"},'.repeat(3000)}{}]`]) {
      expect(errorCodeOf(() => parseVolumesField(text))).toBe("VALIDATION_FAILED");
    }
  });

  test("releaseStrategy: start-first or stop-first", () => {
    expect(parseReleaseStrategyField("stop-first")).toBe("stop-first");
    expect(parseReleaseStrategyField(undefined)).toBeUndefined();
    expect(errorCodeOf(() => parseReleaseStrategyField("rolling"))).toBe("VALIDATION_FAILED");
  });
});
