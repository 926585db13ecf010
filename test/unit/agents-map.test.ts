/**
 * AGENTS.md's layout map stays true: every file and folder under `src/` is named in the section of its
 * top-level folder (a glob like `anthropic*.ts` covers a family; a nested folder is named as `turn/`), and
 * every name the map gives exists there.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const src = join(root, "src");

const FILE = /[\w*.-]+\.(?:ts|cjs|mjs)\b/g;
const FOLDER = /(?<![\w/.-])([\w-]+)\/(?=[\s),;:]|$)/g;

/** The map's `src/` block, by section: "" for the files in src/ itself, else the top-level folder. */
function sections(): Map<string, string> {
  const text = readFileSync(join(root, "AGENTS.md"), "utf8");
  const layout = text.slice(text.indexOf("## Layout"));
  const start = layout.indexOf("```\n") + 4;
  const block = layout.slice(start, layout.indexOf("\n```", start));
  const lines = block.split("\n");
  expect(lines[0]).toBe("src/");
  const out = new Map<string, string>([["", ""]]);
  let current = "";
  for (const line of lines.slice(1)) {
    if (/^\S/.test(line)) break; // test/, bench/: past the src/ block
    const top = /^ {2}([\w-]+)\/(?:\s|$)/.exec(line);
    if (top !== null) {
      current = top[1]!;
      expect(out.has(current), `${current}/ has two sections`).toBe(false);
      out.set(current, line.slice(top[0].length));
      continue;
    }
    out.set(current, `${out.get(current)}\n${line}`);
  }
  return out;
}

/** Files below `dir`, as paths relative to it with `/` separators. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join("/"));
}

function matches(pattern: string, name: string): boolean {
  const re = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[\\w.-]*");
  return new RegExp(`^${re}$`).test(name);
}

describe("AGENTS.md's layout map", () => {
  const map = sections();
  const tops = readdirSync(src, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);

  it("has a section for every folder of src/, and names no folder src/ lacks", () => {
    expect([...map.keys()].filter((k) => k !== "").sort()).toEqual([...tops].sort());
  });

  it("names every file and nested folder of src/ in its folder's section", () => {
    const missing: string[] = [];
    for (const [top, text] of map) {
      const files =
        top === "" ? filesUnder(src).filter((f) => !f.includes("/")) : filesUnder(join(src, top));
      const names = text.match(FILE) ?? [];
      const folders = [...text.matchAll(FOLDER)].map((m) => m[1]!);
      for (const file of files) {
        const parts = file.split("/");
        const base = parts.pop()!;
        if (!names.some((n) => matches(n, base))) missing.push(`${top}/${file}`);
        for (const folder of parts)
          if (!folders.includes(folder)) missing.push(`${top}/${parts.join("/")}/`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it("names no file or folder that does not exist there", () => {
    const stale: string[] = [];
    for (const [top, text] of map) {
      const dir = top === "" ? src : join(src, top);
      const files = top === "" ? filesUnder(src).filter((f) => !f.includes("/")) : filesUnder(dir);
      const bases = files.map((f) => f.split("/").pop()!);
      const folders = new Set(files.flatMap((f) => f.split("/").slice(0, -1)));
      for (const name of text.match(FILE) ?? [])
        if (!bases.some((b) => matches(name, b))) stale.push(`${top}/ ${name}`);
      for (const [, folder] of text.matchAll(FOLDER))
        if (!folders.has(folder!)) stale.push(`${top}/ ${folder}/`);
    }
    expect(stale).toEqual([]);
  });
});
