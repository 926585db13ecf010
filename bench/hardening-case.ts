/**
 * One case of `npm run bench -- hardening`, run by bench/hardening.ts in a child process with a Worker's heap
 * (128 MB): `node hardening-case.ts <source root> <case> <input file>`. The code under test is imported from
 * `<source root>/src`, so the same case runs against this tree ("after") and an older one ("before"); only
 * entry points both have are used. Prints one JSON line: `{status, ms, heap_mb, note}`.
 */
import { readFileSync } from "node:fs";
import { getHeapStatistics } from "node:v8";

const [root, name, file] = process.argv.slice(2) as [string, string, string];
const src = (path: string) => import(`${root}/src/${path}`);
const input = () => new Uint8Array(readFileSync(file));
const text = () => new TextDecoder().decode(input());

const SESSION = { tenant: "t", session: "s" };
const MEM = "trm_00000000000000000000abcd";

async function recallOn(body: string, args: Record<string, unknown>) {
  // The tool's front door where the tree has it (several questions per call), else the single recall.
  const many = await src("core/recall-many.ts").catch(() => null);
  const recall = many?.recallMany ?? (await src("core/recall.ts")).recall;
  if (many === null && ("queries" in args || "json_paths" in args))
    return async () => ({ status: "n/a", note: "this tree has no queries / json_paths" });
  const { MemoryStore } = await src("store/memory.ts");
  const store = new MemoryStore();
  const meta = {
    mem_id: MEM,
    tool_use_id: "t1",
    tool_name: "x",
    chars: body.length,
    tokens: 1,
    kind: "json",
    outline: "",
    turn: 1,
  };
  // A tree with the turn port stores a body through a turn; an older one on the store.
  if (typeof store.beginTurn === "function")
    await (await store.beginTurn(SESSION, { ids: [], names: [] })).putBody(body, meta);
  else await store.putBody(SESSION, body, meta);
  return async () => {
    const a = await recall({ store, session: SESSION, mem_id: MEM, ...args });
    const shown = /showing matches 1–([\d,]+)/.exec(a.content)?.[1];
    return {
      status: a.is_error ? "is_error" : "ok",
      note: `${a.content.length} chars${a.truncated ? ", cut" : ""}${shown === undefined ? "" : `, matches 1–${shown} shown`}${a.is_error ? `: ${a.content.slice(0, 70)}…` : ""}`,
    };
  };
}

/** POST /v1/extract's handling of a query string: its limits, then the extraction. */
async function extractWith(query: string, media_type: string) {
  const { extractOptionsFromQuery } = await src("extract/options.ts");
  const { extractText } = await src("extract/extract.ts");
  const data = input();
  return async () => {
    let options: object;
    try {
      options = extractOptionsFromQuery(new URLSearchParams(query));
    } catch (e) {
      return { status: "400", note: (e as Error).message.slice(0, 90) };
    }
    try {
      const r = await extractText({ data, media_type }, options);
      return { status: "200", note: `${r.text.length} chars of text${r.truncated ? ", cut" : ""}` };
    } catch (e) {
      const body = (e as { body?: () => { reason?: string; message?: string } }).body?.();
      if (body === undefined) return { status: "threw", note: String(e).slice(0, 90) };
      return { status: "422", note: `${body.reason ?? ""}: ${body.message ?? ""}`.slice(0, 90) };
    }
  };
}

/** A compact call with this model, and the x-offload-summary header it would answer with. */
async function summaryFor(model: string) {
  const { compact } = await src("core/compact.ts");
  const { summaryHeader, summaryOf } = await src("http/summary.ts");
  const { MemoryStore } = await src("store/memory.ts");
  const request = JSON.stringify({
    model,
    max_tokens: 10,
    messages: [{ role: "user", content: "hi" }],
  });
  return async () => {
    try {
      const out = await compact({
        request,
        session: SESSION,
        store: new MemoryStore(),
        config: { tool_result_compaction_enabled: true },
        secret: "bench-secret-0123456789",
      });
      const header = summaryHeader(summaryOf(out.report, out.changed, []));
      return { status: "200", note: `x-offload-summary of ${header.length} chars` };
    } catch (e) {
      const err = e as { status?: number; message?: string };
      return { status: String(err.status ?? "threw"), note: (err.message ?? "").slice(0, 90) };
    }
  };
}

const EIGHT_QUERIES = Array.from({ length: 8 }, (_, i) => "a".repeat(i + 1));
const EIGHT_PATHS = ["$..*", "$[*]", "$..name", "$..id", "$..tags", "$..price", "$..x", "$"];

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const RAISED =
  "max_unzipped_entry_bytes=1000000000&max_unzipped_bytes=2000000000&max_zip_ratio=100000&max_chars=50000000&max_bytes=100000000";

const cases: Record<string, () => Promise<() => Promise<{ status: string; note: string }>>> = {
  "1 recall $ on 40,000 levels": () => recallOn(text(), { json_path: "$" }),
  "1 recall $[0] on 40,000 levels": () => recallOn(text(), { json_path: "$[0]" }),
  "2 recall $..* on 10 MB": () => recallOn(text(), { json_path: "$..*" }),
  "2 recall $[*] on 10 MB": () => recallOn(text(), { json_path: "$[*]" }),
  "2 recall query a on 10 MB of a": () => recallOn(text(), { query: "a", window: 0 }),
  "2 recall 8 queries in one call on 10 MB of a": () =>
    recallOn(text(), { queries: EIGHT_QUERIES, window: 0 }),
  "2 recall 8 json_paths in one call on 10 MB": () => recallOn(text(), { json_paths: EIGHT_PATHS }),
  "3 HTML 128,000 unclosed <title>": () => extractWith("", "text/html"),
  "4 DOCX <!a> declarations (2.1 MB)": () => extractWith("", DOCX),
  "5 DOCX bomb, limits raised by query": () => extractWith(RAISED, DOCX),
  "5 DOCX bomb, default limits": () => extractWith("", DOCX),
  "5 PDF max_pages=10000": () => extractWith("max_pages=10000", "application/pdf"),
  "5 PDF max_pages=500": () => extractWith("max_pages=500", "application/pdf"),
  "7 query item- on the README body": () => recallOn(text(), { query: "item-" }),
  "8 model of 20 KB": () => summaryFor("m".repeat(20_000)),
  "8 model of 1 MB": () => summaryFor("m".repeat(1_000_000)),
};

const build = cases[name];
if (build === undefined) throw new Error(`unknown case ${name}`);
const run = await build();
(globalThis as { gc?: () => void }).gc?.();
const t = performance.now();
let result: { status: string; note: string };
try {
  result = await run();
} catch (e) {
  result = { status: "threw", note: `${(e as Error).name}: ${(e as Error).message.slice(0, 80)}` };
}
const ms = Math.round(performance.now() - t);
const heap_mb = Math.round(getHeapStatistics().total_heap_size / 1048576);
console.log(JSON.stringify({ ...result, ms, heap_mb }));
