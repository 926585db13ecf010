/**
 * Every `docs/….md` that the configuration files, scripts and sources point a reader to exists (a comment that
 * sends a newcomer to a missing page is how wrangler.toml once pointed at docs/readme/proxy.md).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? files(path) : [path];
  });
}

describe("references to docs/", () => {
  it("name pages that exist", () => {
    const sources = [
      "wrangler.toml",
      ".dev.vars.example",
      "package.json",
      ".ci/run",
      ...["src", "scripts", "bench", "examples"].flatMap(files),
    ].filter((f) => /\.(ts|mjs|cjs|toml|json|example)$|^\.ci\/run$/.test(f));
    let seen = 0;
    for (const file of sources) {
      for (const [ref] of readFileSync(join(root, file), "utf8").matchAll(
        /\bdocs\/[\w./-]+\.md\b/g,
      )) {
        seen++;
        expect(
          () => statSync(join(root, ref)),
          `${relative(root, join(root, file))} → ${ref}`,
        ).not.toThrow();
      }
    }
    expect(seen).toBeGreaterThan(5);
  });
});
