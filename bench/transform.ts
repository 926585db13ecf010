/**
 * Transform speed: median time of `compact` on a ~1 MB, 40-turn request divided by the median time of
 * JSON.parse + JSON.stringify of the same request, both measured in this run (interleaved). Target ≤ 1.5.
 *
 * The request: no single corpus session has 40 turns and 1 MB (the 40-turn ones are SWE sessions of ~150 KB),
 * so it is composed from real turns of large-sessions.dev: the first large tool_use/tool_result pairs that fit
 * in 85% of 1 MB, then the first smaller pairs up to 40 turns, in file order, ids renamed to stay unique.
 */
import { compact } from "../src/core/compact.ts";
import { anthropicAdapter } from "../src/core/formats/anthropic.ts";
import { decodeString, parseJsonSpans } from "../src/core/json/scan.ts";
import { bodyDigest } from "../src/core/memid.ts";
import { structureOf } from "../src/core/structure.ts";
import { renderStub } from "../src/core/stub.ts";
import { detectKind } from "../src/core/tokens.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { corpus } from "./lib/corpus.ts";
import { fmt, pairedMedians, pairedRatio } from "./lib/stats.ts";

type Block = {
  type: string;
  id?: string;
  tool_use_id?: string;
  content?: unknown;
  [k: string]: unknown;
};
type Msg = { role: "user" | "assistant"; content: string | Block[] };

export function composeRequest(targetChars = 1_000_000, turns = 40): string {
  const sessions = corpus("large");
  // Every tool_use/tool_result pair of the file, in order.
  const pairs: { order: number; a: Msg; u: Msg; use: Block; res: Block; size: number }[] = [];
  for (const s of sessions) {
    for (let i = 1; i + 1 < s.messages.length; i++) {
      const a = s.messages[i] as Msg;
      const u = s.messages[i + 1] as Msg;
      if (a.role !== "assistant" || !Array.isArray(a.content) || !Array.isArray(u.content))
        continue;
      const use = a.content.find((b) => b.type === "tool_use");
      const res = u.content.find((b) => b.type === "tool_result");
      if (use !== undefined && res !== undefined)
        pairs.push({ order: pairs.length, a, u, use, res, size: JSON.stringify([a, u]).length });
    }
  }
  // The first large results that fit in 85% of the target, then the first smaller turns up to 40 turns.
  const picked: typeof pairs = [];
  let size = 0;
  for (const p of pairs) {
    if (p.size >= 60_000 && size + p.size <= targetChars * 0.85) {
      picked.push(p);
      size += p.size;
    }
  }
  for (const p of pairs) {
    if (picked.length >= turns) break;
    if (p.size < 60_000 && size + p.size <= targetChars) {
      picked.push(p);
      size += p.size;
    }
  }
  picked.sort((x, y) => x.order - y.order);
  const messages: Msg[] = [
    { role: "user", content: "Work through the tasks below, one tool call per step." },
  ];
  picked.forEach((p, n) => {
    const id = `toolu_bench_${String(n).padStart(3, "0")}`;
    messages.push({
      role: "assistant",
      content: (p.a.content as Block[]).map((b) => (b === p.use ? { ...b, id } : b)),
    });
    messages.push({
      role: "user",
      content: (p.u.content as Block[]).map((b) => (b === p.res ? { ...b, tool_use_id: id } : b)),
    });
  });
  return JSON.stringify({
    model: "claude-sonnet-4-6",
    max_tokens: 4096,
    system: sessions[0]!.system,
    tools: sessions[0]!.tools,
    messages,
  });
}

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

/**
 * Where a first sight's time goes: each piece of the work timed on its own over the same request, as a
 * share of JSON.parse + JSON.stringify (medians, measured in this run). "scan" reads the request into spans
 * (every turn does this); "decode" turns the results over the size floor into text; "structure" parses the
 * large ones for their structural index (and the index of ids and names); "hash" keys their mem_ids; "stub"
 * renders the stubs.
 */
export async function firstSightBreakdown(
  text: string,
  rounds = 30,
): Promise<Record<string, number>> {
  const root = parseJsonSpans(text);
  const analysis = anthropicAdapter.analyze(text, root);
  const bodies = analysis.sites
    .map((s) => s.texts.map((t) => decodeString(text, t)).join("\n"))
    .filter((b) => b.length > 8000);
  const large = bodies.filter((b) => b.length >= 60_000);
  const structures = large.map((b) => structureOf(b, detectKind(b)));
  const pieces: Record<string, () => unknown> = {
    scan: () => anthropicAdapter.analyze(text, parseJsonSpans(text)),
    decode: () =>
      analysis.sites.map((s) =>
        s.texts.length > 0 && s.texts[0]!.end - s.texts[0]!.start > 8000
          ? s.texts.map((t) => decodeString(text, t)).join("\n")
          : null,
      ),
    structure: () => large.map((b) => structureOf(b, detectKind(b))),
    hash: () => Promise.all(large.map((b) => bodyDigest("bench-secret-0123456789", "t", "s", b))),
    stub: () =>
      large.map((b, i) =>
        renderStub({
          unseen: false,
          mem_id: "trm_000000000000000000000000",
          tool_name: "bash",
          chars: b.length,
          tokens: 1,
          structure: structures[i]!,
          body: b,
          preview_chars: 500,
          mode: "both",
        }),
      ),
  };
  const base = () => JSON.stringify(JSON.parse(text));
  const out: Record<string, number> = {};
  for (const [name, piece] of Object.entries(pieces)) {
    const [t, b] = await pairedMedians(piece, base, rounds);
    out[name] = t / b;
  }
  return out;
}

export async function benchTransform(rounds = 40): Promise<Record<string, number>> {
  const text = composeRequest();
  const turns = (JSON.parse(text) as { messages: Msg[] }).messages.filter(
    (m) => m.role === "assistant",
  ).length;
  const baseline = () => JSON.stringify(JSON.parse(text));

  // Steady state: every result was decided on an earlier turn (the common case on every turn of a session).
  const store = new MemoryStore();
  const first = await compact({ request: text, session: "bench", store, config: ON });
  const steady = () => compact({ request: text, session: "bench", store, config: ON });
  const [tSteady, tBase] = await pairedMedians(steady, baseline, rounds);

  // First sight: a fresh session, so every settled result is tiered, gated, hashed and ledgered now.
  // The ratio is taken round by round (each first sight against the baseline next to it), then its
  // median: on a shared machine the two medians alone drift apart.
  let i = 0;
  const fresh = () =>
    compact({ request: text, session: `fresh-${i++}`, store: new MemoryStore(), config: ON });
  const [tFresh, tBase2, firstRatio] = await pairedRatio(fresh, baseline, Math.max(20, rounds));

  // Off: the default; must cost nothing.
  const off = () => compact({ request: text, session: "off", store, config: {} });
  const [tOff, tBase3] = await pairedMedians(off, baseline, rounds);

  const out = {
    request_chars: text.length,
    turns,
    offloaded: first.report.offloaded,
    parse_stringify_ms: tBase,
    steady_ms: tSteady,
    steady_ratio: tSteady / tBase,
    first_sight_ms: tFresh,
    first_sight_ratio: firstRatio,
    off_ratio: tOff / tBase3,
  };
  console.log(
    `transform: ${(text.length / 1e6).toFixed(2)} MB, ${turns} turns, ${first.report.offloaded} offloaded, ${first.report.results} results`,
  );
  console.log(`  JSON.parse+stringify      ${fmt(tBase)} ms`);
  console.log(
    `  compact, steady turn      ${fmt(tSteady)} ms   ratio ${(tSteady / tBase).toFixed(2)}  (target ≤ 1.5)`,
  );
  console.log(
    `  compact, first sight      ${fmt(tFresh)} ms   ratio ${firstRatio.toFixed(2)}  (every result decided, hashed, ledgered; baseline ${fmt(tBase2)} ms)`,
  );
  const pieces = await firstSightBreakdown(text);
  console.log(
    `  where a first sight's time goes (× parse+stringify): ${Object.entries(pieces)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(", ")}`,
  );
  Object.assign(out, Object.fromEntries(Object.entries(pieces).map(([k, v]) => [`piece_${k}`, v])));
  console.log(`  compact, off              ratio ${(tOff / tBase3).toFixed(3)}`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchTransform();
