// The dependency rule: the core (src/core) is pure and defines the ports its adapters implement, so nothing in
// it may import an adapter folder or a runtime's own modules, and runtime imports form no cycle (the core's, and
// src/'s as a whole: the core imports config.ts, which must not import back into a loop).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const CORE = join(ROOT, "src/core");
const ADAPTERS = ["store", "extract", "session", "http", "routes", "proxy", "integrations"];
/** Runtime-specific modules: the core runs in Node, Deno, Bun and workerd alike. */
const RUNTIME = /^(?:node:|cloudflare:|hono(?:\/|$))/;

interface Import {
  specifier: string;
  /** `import type` / `export type`: erased at build time, so it cannot form a runtime cycle. */
  typeOnly: boolean;
}

/** Every module a source text imports or re-exports, static or dynamic. */
function importsOf(source: string): Import[] {
  const out: Import[] = [];
  const statement =
    /(?:^|[;\s])(import|export)\s+(type\s+)?(?:[^;'"]*?\s+from\s+)?["']([^"']+)["']/g;
  for (const m of source.matchAll(statement))
    out.push({ specifier: m[3]!, typeOnly: m[2] !== undefined });
  for (const m of source.matchAll(/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g))
    out.push({ specifier: m[1]!, typeOnly: false });
  return out;
}

/** Why `specifier`, imported by the core file `file`, breaks the rule (null when it does not). */
function violation(file: string, specifier: string): string | null {
  if (RUNTIME.test(specifier)) return `${specifier} is a runtime's module`;
  if (!specifier.startsWith(".")) return null;
  const target = relative(join(ROOT, "src"), resolve(dirname(file), specifier));
  const folder = target.split(/[\\/]/)[0]!;
  return ADAPTERS.includes(folder) ? `src/${target} is in the adapter folder src/${folder}` : null;
}

function coreFiles(dir = CORE): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? coreFiles(join(dir, e.name))
      : e.name.endsWith(".ts")
        ? [join(dir, e.name)]
        : [],
  );
}

describe("the core's imports point into the core", () => {
  const files = coreFiles();

  it("finds the core's files", () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files.map((f) => relative(CORE, f))).toContain("ports.ts");
  });

  it("no file in src/core imports an adapter folder or a runtime module", () => {
    const found: string[] = [];
    for (const file of files)
      for (const { specifier } of importsOf(readFileSync(file, "utf8"))) {
        const why = violation(file, specifier);
        if (why !== null) found.push(`${relative(ROOT, file)}: ${why}`);
      }
    expect(found).toEqual([]);
  });

  it("the check itself flags a wrong-way import, typed, dynamic or re-exported", () => {
    const file = join(CORE, "turn/example.ts");
    const source = [
      'import { EdgeStore } from "../../store/edge.ts";',
      'import type { Extractor } from "../../extract/cache.ts";',
      'export { x } from "../../proxy/loop.ts";',
      'const m = await import("../../session/state.ts");',
      'import { DurableObject } from "cloudflare:workers";',
      'import { safeCut } from "../text.ts";',
      'import { z } from "zod";',
    ].join("\n");
    const flagged = importsOf(source).filter((i) => violation(file, i.specifier) !== null);
    expect(flagged.map((i) => i.specifier)).toEqual([
      "../../store/edge.ts",
      "../../extract/cache.ts",
      "../../proxy/loop.ts",
      "cloudflare:workers",
      "../../session/state.ts",
    ]);
  });

  it("runtime imports form no cycle, in the core or through what it imports (config.ts, errors.ts)", () => {
    const SRC = join(ROOT, "src");
    const all = coreFiles(SRC);
    const graph = new Map<string, string[]>();
    for (const file of all)
      graph.set(
        file,
        importsOf(readFileSync(file, "utf8"))
          .filter((i) => !i.typeOnly && i.specifier.startsWith("."))
          .map((i) => resolve(dirname(file), i.specifier))
          .filter((target) => target.startsWith(SRC)),
      );
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        const loop = path.slice(path.indexOf(file));
        cycles.push([...loop, file].map((f) => relative(SRC, f)).join(" → "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of all) visit(file, []);
    expect(all.length).toBeGreaterThan(files.length);
    expect(cycles).toEqual([]);
  });
});
