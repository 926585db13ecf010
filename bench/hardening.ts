/**
 * `npm run bench -- hardening`: the hardening audit's inputs, replayed against this tree ("after") and against
 * the code before the fixes ("before": the git ref in HARDENING_BEFORE, by default where this branch left
 * main), when git can give it.
 * Each case runs in a child process with a Worker's heap (--max-old-space-size=128) and a time limit, and
 * prints its outcome (status), time and V8 heap. Absolute times are this machine's; what carries over is the
 * difference in kind: a throw or a crash against an is_error answer, seconds against milliseconds.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docx, para } from "../test/fixtures/office-writer.ts";
import { textPdf } from "../test/fixtures/pdf-writer.ts";

const MB = 1024 * 1024;
const here = new URL(".", import.meta.url).pathname;
const repo = join(here, "..");
const TIME_LIMIT_MS = Number(process.env.HARDENING_TIME_LIMIT_MS ?? 60_000);

function records(n: number): string {
  const items = [];
  for (let i = 0; i < n; i++)
    items.push({ id: i, name: `item-${i}`, tags: ["a", "b"], price: i * 1.5 });
  return JSON.stringify({ items });
}

const deep = `${"[".repeat(40_000)}${"]".repeat(40_000)}`;
const big = records(150_000);
const readme = JSON.stringify({
  items: Array.from({ length: 1500 }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
});
const pdf = textPdf(Array.from({ length: 10_000 }, (_, i) => [`page ${i + 1}`]));
const bomb = docx(para("zip bomb ".repeat(50)).repeat(280_000), 9);

const inputs: Record<string, string | Uint8Array> = {
  "1 recall $ on 40,000 levels": deep,
  "1 recall $[0] on 40,000 levels": deep,
  "2 recall $..* on 10 MB": big,
  "2 recall $[*] on 10 MB": big,
  "2 recall query a on 10 MB of a": "a".repeat(10 * MB),
  "2 recall 8 queries in one call on 10 MB of a": "a".repeat(10 * MB),
  "2 recall 8 json_paths in one call on 10 MB": big,
  "3 HTML 128,000 unclosed <title>": `<html><head>${"<title>x".repeat(128_000)}</head><body>b</body></html>`,
  "4 DOCX <!a> declarations (2.1 MB)": docx(`${"<!a>".repeat(525_000)}${para("x")}`, 0),
  "5 DOCX bomb, limits raised by query": bomb,
  "5 DOCX bomb, default limits": bomb,
  "5 PDF max_pages=10000": pdf,
  "5 PDF max_pages=500": pdf,
  "7 query item- on the README body": readme,
  "8 model of 20 KB": "",
  "8 model of 1 MB": "",
};

const dir = mkdtempSync(join(tmpdir(), "edge-offload-hardening-"));

/** The old tree's src next to this repository's node_modules, or null if git cannot give it. */
function beforeRoot(): string | null {
  const base = spawnSync("git", ["-C", repo, "merge-base", "HEAD", "main"], { encoding: "utf8" });
  const ref = process.env.HARDENING_BEFORE ?? (base.status === 0 ? base.stdout.trim() : "main");
  const root = join(dir, "before");
  mkdirSync(root);
  const archive = spawnSync("git", ["-C", repo, "archive", "--format=tar", ref, "src"], {
    maxBuffer: 256 * MB,
  });
  if (archive.status !== 0) return null;
  const tar = spawnSync("tar", ["-x", "-C", root], { input: archive.stdout });
  if (tar.status !== 0) return null;
  symlinkSync(join(repo, "node_modules"), join(root, "node_modules"));
  return root;
}

function runCase(root: string, name: string): string {
  const file = join(dir, `${name.replace(/[^a-z0-9]+/gi, "-")}.in`);
  writeFileSync(file, inputs[name]!);
  const r = spawnSync(
    process.execPath,
    [
      "--max-old-space-size=128",
      "--expose-gc",
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      join(here, "hardening-case.ts"),
      root,
      name,
      file,
    ],
    { timeout: TIME_LIMIT_MS, encoding: "utf8", maxBuffer: 16 * MB },
  );
  if (r.error !== undefined && (r.error as { code?: string }).code === "ETIMEDOUT")
    return `timeout: still running after ${TIME_LIMIT_MS / 1000} s (killed)`;
  const line = r.stdout.trim().split("\n").at(-1) ?? "";
  if (r.status !== 0) {
    const oom = /heap out of memory|Reached heap limit/.test(r.stderr);
    return oom ? "crashed: out of memory at 128 MB" : `crashed (exit ${r.status ?? r.signal})`;
  }
  const o = JSON.parse(line) as { status: string; ms: number; heap_mb: number; note: string };
  return `${o.status.padEnd(8)} ${String(o.ms).padStart(6)} ms  heap ${String(o.heap_mb).padStart(3)} MB  ${o.note}`;
}

try {
  const before = beforeRoot();
  const names = Object.keys(inputs);
  for (const name of names) {
    console.log(`\n${name}`);
    if (before !== null) console.log(`  before: ${runCase(before, name)}`);
    console.log(`  after:  ${runCase(repo, name)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
