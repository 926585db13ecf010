/**
 * Memory: can a 32 MB request be compacted inside a Worker's 128 MB isolate? For each operation, the smallest
 * V8 old-space limit (--max-old-space-size, binary search over child processes) under which it completes on
 * a ~32 MB request composed of real large-sessions turns, compared with JSON.parse + JSON.stringify of the
 * same request. The ledger is a null sink here (the Worker streams bodies to R2), session state is in memory.
 * V8's limit does not count off-heap buffers (the UTF-8 bytes hashed for mem_ids), so these are heap figures.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { compact } from "../src/core/compact.ts";
import type { ResultRecord } from "../src/core/types.ts";
import { ComposedStore } from "../src/store/composed.ts";
import { MemoryIndex } from "../src/store/memory-index.ts";
import { MemoryLedger } from "../src/store/memory-ledger.ts";
import { MemorySessionState } from "../src/store/memory-state.ts";
import { turnLog } from "../test/support/records.ts";
import { corpus } from "./lib/corpus.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

/** Session state in memory, bodies dropped (as if streamed to R2). */
function nullLedgerStore(): ComposedStore {
  const ledger = new MemoryLedger();
  ledger.put = async () => {};
  return new ComposedStore({
    sessions: new MemorySessionState(),
    ledger,
    index: new MemoryIndex(),
  });
}

function compose(targetChars: number): string {
  const sessions = corpus("large");
  const messages: unknown[] = [{ role: "user", content: "Work through the tasks below." }];
  let size = 0;
  let n = 0;
  // The whole file is ~20 MB: go round it again (ids stay unique) until the target size.
  for (let _round = 0; size < targetChars; _round++) {
    for (const s of sessions) {
      for (let i = 1; i + 1 < s.messages.length && size < targetChars; i += 2) {
        const a = s.messages[i] as { role: string; content: { type: string; id?: string }[] };
        const u = s.messages[i + 1] as {
          role: string;
          content: { type: string; tool_use_id?: string }[];
        };
        if (a.role !== "assistant" || !Array.isArray(a.content) || !Array.isArray(u.content))
          continue;
        const id = `toolu_mem_${n++}`;
        const ids = new Set(a.content.filter((b) => b.type === "tool_use").map((b) => b.id));
        if (ids.size !== 1) continue;
        messages.push({
          ...a,
          content: a.content.map((b) => (b.type === "tool_use" ? { ...b, id } : b)),
        });
        messages.push({
          ...u,
          content: u.content.map((b) => (b.type === "tool_result" ? { ...b, tool_use_id: id } : b)),
        });
        size += JSON.stringify([a, u]).length;
      }
    }
  }
  messages.push({ role: "assistant", content: [{ type: "text", text: "Done." }] });
  return JSON.stringify({
    model: "claude-sonnet-4-6",
    max_tokens: 4096,
    system: sessions[0]!.system,
    tools: sessions[0]!.tools,
    messages,
  });
}

async function child(mode: string, requestPath: string, recordsPath: string): Promise<void> {
  const text = readFileSync(requestPath, "utf8");
  if (mode === "parse-stringify") {
    const s = JSON.stringify(JSON.parse(text));
    if (s.length === 0) process.exit(3);
    return;
  }
  const store = nullLedgerStore();
  if (mode === "compact-steady") {
    const records = JSON.parse(readFileSync(recordsPath, "utf8")) as ResultRecord[];
    const turn = await store.beginTurn(
      { tenant: "default", session: "mem" },
      { ids: [], names: [] },
    );
    await turn.commit({
      records,
      recall_declared: true,
      log: turnLog(0),
    });
    await turn.finish();
  }
  const out = await compact({ request: text, session: "mem", store, config: ON });
  if (mode === "compact-first") {
    const summary = await store.describeSession({ tenant: "default", session: "mem" });
    writeFileSync(recordsPath, JSON.stringify(summary?.records ?? []));
  }
  if (typeof out.request !== "string") process.exit(3);
}

function fits(mode: string, heapMb: number, requestPath: string, recordsPath: string): boolean {
  const r = spawnSync(
    process.execPath,
    [
      `--max-old-space-size=${heapMb}`,
      new URL(import.meta.url).pathname,
      "--child",
      mode,
      requestPath,
      recordsPath,
    ],
    { encoding: "utf8", timeout: 120_000 },
  );
  return r.status === 0;
}

function minHeap(mode: string, requestPath: string, recordsPath: string): number {
  let lo = 8;
  let hi = 1024;
  if (!fits(mode, hi, requestPath, recordsPath)) return Infinity;
  while (hi - lo > 4) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mode, mid, requestPath, recordsPath)) hi = mid;
    else lo = mid;
  }
  return hi;
}

export async function benchMemory(targetMb = 32): Promise<Record<string, number>> {
  const dir = mkdtempSync(`${tmpdir()}/edge-offload-mem-`);
  try {
    const text = compose(targetMb * 1_000_000);
    const requestPath = `${dir}/request.json`;
    const recordsPath = `${dir}/records.json`;
    writeFileSync(requestPath, text);
    // The first-sight run also writes the decisions the steady run starts from.
    if (!fits("compact-first", 2048, requestPath, recordsPath))
      throw new Error("compact failed even with 2 GB");
    const mb = text.length / 1e6;
    const base = minHeap("parse-stringify", requestPath, recordsPath);
    const first = minHeap("compact-first", requestPath, recordsPath);
    const steady = minHeap("compact-steady", requestPath, recordsPath);
    console.log(`memory: ${mb.toFixed(1)} MB request; smallest V8 heap limit that completes (MB):`);
    console.log(`  JSON.parse+stringify   ${base}`);
    console.log(`  compact, first sight   ${first}   ratio ${(first / base).toFixed(2)}`);
    console.log(`  compact, steady turn   ${steady}   ratio ${(steady / base).toFixed(2)}`);
    return {
      request_mb: mb,
      parse_stringify_heap_mb: base,
      first_sight_heap_mb: first,
      steady_heap_mb: steady,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child")
  await child(process.argv[3]!, process.argv[4]!, process.argv[5]!);
else if (import.meta.url === `file://${process.argv[1]}`) await benchMemory();
