import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { tarStream } from "../../../src/docker/tar";
import { tempDir } from "../../helpers/temp";

test("the system tar reads what the writer streams: inline and on-disk files, long paths, modes", async () => {
  const dir = tempDir();
  const big = new Uint8Array(700_000).map((_, i) => i % 253);
  writeFileSync(`${dir}/big.bin`, big);
  const longPath = `deep/${"d".repeat(90)}/${"f".repeat(60)}.txt`;
  const stream = tarStream([
    { path: "Dockerfile", mode: 0o644, content: new TextEncoder().encode("FROM scratch\n") },
    { path: "bin/run.sh", mode: 0o755, content: new TextEncoder().encode("#!/bin/sh\n") },
    { path: "big.bin", mode: 0o644, content: { file: `${dir}/big.bin`, size: big.length } },
    { path: longPath, mode: 0o644, content: new TextEncoder().encode("long") },
  ]);
  writeFileSync(`${dir}/out.tar`, new Uint8Array(await new Response(stream).arrayBuffer()));
  const out = `${dir}/x`;
  Bun.spawnSync(["mkdir", out]);
  const extracted = Bun.spawnSync(["tar", "-xf", `${dir}/out.tar`, "-C", out]);
  expect(extracted.exitCode).toBe(0);
  expect(await Bun.file(`${out}/Dockerfile`).text()).toBe("FROM scratch\n");
  expect(Bun.hash(await Bun.file(`${out}/big.bin`).bytes())).toBe(Bun.hash(big));
  expect(await Bun.file(`${out}/${longPath}`).text()).toBe("long");
  const listing = Bun.spawnSync(["tar", "-tvf", `${dir}/out.tar`]).stdout.toString();
  expect(listing).toMatch(/-rwxr-xr-x .* bin\/run\.sh/);
});
