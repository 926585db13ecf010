/**
 * Every TypeScript block (```ts) of README.md and docs/*.md compiles as written, against the sources and the
 * official SDKs' types: each block becomes a module in test/.artifacts/snippets (git-ignored), and tsc checks
 * them with test/types/snippets/globals.d.ts declaring what the blocks leave to their reader. A block that is
 * not meant to compile should use another fence (```js, ```text). Errors are reported at the document's line.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(root, "test", ".artifacts", "snippets");
const DOCS = ["README.md", ...readdirSync(join(root, "docs")).map((f) => `docs/${f}`)];

interface Snippet {
  doc: string;
  /** The document's line of the block's first code line. */
  line: number;
  code: string;
}

function snippets(): Snippet[] {
  const out: Snippet[] = [];
  for (const doc of DOCS) {
    const lines = readFileSync(join(root, doc), "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (lines[i] !== "```ts") continue;
      const end = lines.indexOf("```", i + 1);
      out.push({ doc, line: i + 2, code: lines.slice(i + 1, end).join("\n") });
      i = end;
    }
  }
  return out;
}

describe("documentation snippets", () => {
  it("every TypeScript block in README.md and docs/*.md type-checks as written", () => {
    const all = snippets();
    const fences = DOCS.reduce(
      (n, doc) => n + (readFileSync(join(root, doc), "utf8").match(/^```ts$/gm)?.length ?? 0),
      0,
    );
    expect(all).toHaveLength(fences);
    expect(all.length).toBeGreaterThanOrEqual(8);
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    const files = new Map<string, Snippet>();
    for (const s of all) {
      const name = `${s.doc.replace(/[/.]/g, "-")}-L${s.line}.ts`;
      files.set(name, s);
      writeFileSync(join(OUT, name), `${s.code}\nexport {};\n`);
    }
    const tsc = spawnSync(
      process.execPath,
      [
        join(root, "node_modules", "typescript", "bin", "tsc"),
        "-p",
        "test/types/snippets/tsconfig.json",
      ],
      { cwd: root, encoding: "utf8" },
    );
    // "test/.artifacts/snippets/README-md-L106.ts(12,5): error …" → "README.md:117:5: error …"
    const report = (tsc.stdout + tsc.stderr).replace(
      /^test\/\.artifacts\/snippets\/([^(]+)\((\d+),(\d+)\)/gm,
      (whole, name: string, line: string, col: string) => {
        const s = files.get(name);
        return s === undefined ? whole : `${s.doc}:${s.line + Number(line) - 1}:${col}`;
      },
    );
    expect(report).toBe("");
    expect(tsc.status).toBe(0);
  }, 60_000);
});
