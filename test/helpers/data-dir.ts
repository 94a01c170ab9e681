// What a data dir holds, for tests that check a refused or removed upload left nothing behind.
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** Every path under `dataDir` (folders end in "/"), sorted, except the database and the master key. */
export function dataDirTree(dataDir: string): string[] {
  const paths: string[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      if (prefix === "" && (name.startsWith("platform.sqlite") || name === "master.key")) continue;
      const path = prefix + name;
      if (lstatSync(join(dir, name)).isDirectory()) {
        paths.push(`${path}/`);
        walk(join(dir, name), `${path}/`);
      } else paths.push(path);
    }
  };
  walk(dataDir, "");
  return paths.sort();
}
