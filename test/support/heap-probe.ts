/**
 * Hostile ~10 MB inputs through each recall mode (one question, and eight in one call) and extractor, in a
 * process of its own: the work-budget suite (and `npm run bench -- hardening`) writes each input to a file,
 * then runs
 *   node --max-old-space-size=128 --expose-gc --experimental-strip-types test/support/heap-probe.ts \
 *     <case> <file> [<case> <file> …]
 * (a Worker isolate's memory) and checks that it completes. The inputs are built by the parent so that only
 * the work itself has to fit; cases run one after the other, with a full GC between them. Prints one JSON
 * line per case: `{case, ms, heap_mb}` (`heap_mb`: V8's heap size after the case).
 */
import { readFileSync } from "node:fs";
import { getHeapStatistics } from "node:v8";
import { recallMany } from "../../src/core/recall-many.ts";
import { extractText } from "../../src/extract/extract.ts";
import { docx, para, xlsx } from "../fixtures/office-writer.ts";
import { MEM, SESSION, withBody } from "./recall.ts";

const MB = 1024 * 1024;

let recordsBody: string | undefined;

/** ~10 MB of JSON records, the audit's recall body (built once). */
function records(): string {
  if (recordsBody !== undefined) return recordsBody;
  const items = [];
  for (let i = 0; i < 150_000; i++)
    items.push({ id: i, name: `item-${i}`, tags: ["a", "b"], price: i * 1.5 });
  recordsBody = JSON.stringify({ items });
  return recordsBody;
}

/**
 * Letters from a fixed sequence (so a zip does not shrink them past its ratio guard), led by one Cyrillic
 * letter: one byte a char as UTF-8 but two once decoded (the whole string becomes two-byte), the worst case
 * of a part's decoded size.
 */
const BLOCK = (() => {
  const out: string[] = [];
  let x = 1;
  for (let i = 0; i < 65_536; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out.push(String.fromCharCode(97 + ((x >> 16) % 26)));
  }
  return out.join("");
})();

function wide(n: number, seed = 0): string {
  // A period of 64 KB is longer than deflate's 32 KB window: the repeats do not compress.
  const from = (seed * 7919) % BLOCK.length;
  if (from + n <= BLOCK.length) return `ж${BLOCK.slice(from, from + n - 1)}`;
  const rotated = BLOCK.slice(from) + BLOCK.slice(0, from);
  return `ж${rotated.repeat(Math.ceil(n / BLOCK.length)).slice(0, n - 1)}`;
}

type Input =
  | { kind: "recall"; args: Record<string, unknown>; body: () => string }
  | { kind: "extract"; media_type: string; data: () => Uint8Array | string };

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

function sheetRows(n: number): string {
  const rows: string[] = [];
  for (let r = 1; r <= n; r++)
    rows.push(
      `<row r="${r}"><c r="A${r}" t="s"><v>${r - 1}</v></c><c r="B${r}" t="inlineStr"><is><t>${wide(100, r)}</t></is></c></row>`,
    );
  return rows.join("");
}

export const CASES: Record<string, Input> = {
  "recall-query-a": {
    kind: "recall",
    args: { query: "a", window: 0 },
    body: () => "a".repeat(10 * MB),
  },
  "recall-path-descendants": { kind: "recall", args: { json_path: "$..*" }, body: records },
  "recall-path-root": { kind: "recall", args: { json_path: "$" }, body: records },
  "recall-path-filter": {
    kind: "recall",
    args: { json_path: "$.items[?(@.price > 1e9)]" },
    body: records,
  },
  "recall-path-deep": {
    kind: "recall",
    args: { json_path: "$..*" },
    body: () => `${"[".repeat(5 * MB)}${"]".repeat(5 * MB)}`,
  },
  "recall-queries-8": {
    kind: "recall",
    args: {
      queries: ["a", "aa", "aaa", "aaaa", "aaaaa", "aaaaaa", "aaaaaaa", "aaaaaaaa"],
      window: 0,
    },
    body: () => "a".repeat(10 * MB),
  },
  "recall-paths-8": {
    kind: "recall",
    args: {
      json_paths: ["$..*", "$", "$..name", "$..id", "$.items[*]", "$..tags", "$..x", "$..[0]"],
    },
    body: records,
  },
  "recall-path-empties": {
    kind: "recall",
    args: { json_path: "$[0]" },
    body: () => `[${"[],".repeat(3 * MB)}[]]`,
  },
  "extract-html": {
    kind: "extract",
    media_type: "text/html",
    data: () =>
      `<html><head>${"<title>x".repeat(1_200_000)}</head><body><pre>${" ".repeat(MB)}x</pre></body></html>`,
  },
  "extract-text": { kind: "extract", media_type: "text/plain", data: () => wide(10 * MB) },
  "extract-docx": {
    kind: "extract",
    media_type: DOCX,
    data: () => docx(Array.from({ length: 2500 }, (_, i) => para(wide(4000, i))).join("")),
  },
  "extract-docx-declarations": {
    kind: "extract",
    media_type: DOCX,
    data: () => docx(`${"<!a>".repeat(2_500_000)}${para("x")}`),
  },
  "extract-xlsx": {
    kind: "extract",
    media_type: XLSX,
    data: () =>
      xlsx(
        [{ name: "S", rowsXml: sheetRows(40_000) }],
        Array.from({ length: 40_000 }, (_, i) => `<si><t>${wide(120, i)}</t></si>`),
      ),
  },
};

/** The bytes of a case's input, to be written to the file the child reads. */
export function inputBytes(name: string): Uint8Array {
  const input = CASES[name];
  if (input === undefined) throw new Error(`unknown case ${name}`);
  const data = input.kind === "recall" ? input.body() : input.data();
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

async function main(name: string, file: string): Promise<void> {
  const input = CASES[name];
  if (input === undefined) throw new Error(`unknown case ${name}`);
  const bytes = new Uint8Array(readFileSync(file));
  let run: () => Promise<void>;
  if (input.kind === "recall") {
    const store = await withBody(new TextDecoder().decode(bytes));
    run = async () => {
      const a = await recallMany({ store, session: SESSION, mem_id: MEM, ...input.args });
      if (a.content.length > 50_000) throw new Error("answer over the cap");
    };
  } else {
    run = async () => {
      await extractText({ data: bytes, media_type: input.media_type }).catch((e: unknown) => {
        // A refusal (too large, corrupt) is a fine outcome; only running out of memory is not.
        if (!(e instanceof Error) || !("body" in e)) throw e;
      });
    };
  }
  (globalThis as { gc?: () => void }).gc?.();
  const t = performance.now();
  await run();
  const ms = Math.round(performance.now() - t);
  console.log(
    JSON.stringify({
      case: name,
      ms,
      heap_mb: Math.round(getHeapStatistics().total_heap_size / MB),
    }),
  );
}

const args = process.argv.slice(2);
for (let i = 0; i + 1 < args.length; i += 2) await main(args[i]!, args[i + 1]!);
