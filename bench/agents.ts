/**
 * Agents that cap their own outputs (Claude Code, Codex CLI): their recorded request shapes
 * (test/fixtures/agent-traces) expanded into long sessions, compacted turn by turn under several configs,
 * and billed by the billing fake (its cache rules and tokenizer). The sessions grow by repeating the trace's
 * own tool calls and results in order (fresh ids, each result's text marked with its turn so no two are the
 * same), with the agent's cache marker moved to the newest block as the agent moves it. Prints, per agent and
 * config: the results offloaded, the turn at which the agent's own compaction would fire and the turn of a
 * context overflow (both from the prompt tokens the provider reports, which is what the agents count), the
 * context-pressure batches (when, how many results, what the batch turn cost over the same turn without
 * offload), and the bill up to the turn the agent without offload compacts.
 *
 * The agents' thresholds are assumptions taken from their public descriptions: Claude Code compacts at the
 * window less 33K tokens (20K kept for the summary, a 13K buffer: 167K of 200K), Codex at 90% of the window.
 * The fake model never recalls (so recall hops are not in these figures) and answers "ok".
 *
 * `npm run bench -- agents` (a minute); `--turns=N` sets how many turns each session runs (default 160).
 */
import { compact } from "../src/core/compact.ts";
import { resolveModel } from "../src/core/pricing.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { type AgentTrace, expandTrace, loadTrace } from "../test/support/agent-traces.ts";
import { BillingFake, say } from "../test/support/billing-fake.ts";

type Json = Record<string, unknown>;

const CONFIGS: Record<string, Json> = {
  none: { tool_result_compaction_enabled: false },
  "lazy, no pressure": {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_context_pressure_share: null,
  },
  "free declaration, no pressure": {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_recall_tool_declaration: "free",
    tool_result_context_pressure_share: null,
  },
  defaults: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
  "defaults + free declaration": {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_recall_tool_declaration: "free",
  },
};

/** The prompt tokens at which the agent compacts on its own (see the header). */
const COMPACTS_AT: Record<string, (window: number) => number> = {
  "claude-code": (w) => w - 33_000,
  codex: (w) => Math.floor(w * 0.9),
};

const listKey = (req: Json): "messages" | "input" => ("messages" in req ? "messages" : "input");

/** A call and its result, as consecutive items of the agent's own history. */
function pairsOf(req: Json): Json[][] {
  const items = req[listKey(req)] as Json[];
  const out: Json[][] = [];
  for (let i = 0; i + 1 < items.length; i++) {
    const a = items[i]!;
    const b = items[i + 1]!;
    const anthropic =
      a.role === "assistant" &&
      Array.isArray(a.content) &&
      a.content.some((x: Json) => x.type === "tool_use") &&
      Array.isArray(b.content) &&
      b.content.some((x: Json) => x.type === "tool_result");
    const responses =
      typeof a.type === "string" &&
      a.type.endsWith("_call") &&
      b.type === `${a.type}_output` &&
      a.call_id === b.call_id;
    if (anthropic || responses) out.push([a, b]);
  }
  return out;
}

/** The longest string in a value, rewritten in place by `edit` (same length). */
function markLongest(value: unknown, mark: string): unknown {
  let best: { holder: Json | unknown[]; key: string | number; len: number } | null = null;
  const walk = (v: unknown) => {
    if (Array.isArray(v))
      v.forEach((x, i) => {
        if (typeof x === "string" && x.length > (best?.len ?? 0))
          best = { holder: v, key: i, len: x.length };
        else walk(x);
      });
    else if (typeof v === "object" && v !== null)
      for (const [k, x] of Object.entries(v as Json)) {
        if (typeof x === "string" && x.length > (best?.len ?? 0))
          best = { holder: v as Json, key: k, len: x.length };
        else walk(x);
      }
  };
  walk(value);
  if (best !== null) {
    const b = best as { holder: Json & unknown[]; key: string & number };
    const s = b.holder[b.key] as unknown as string;
    b.holder[b.key] = (mark + s.slice(mark.length)) as never;
  }
  return value;
}

/** Moves Anthropic's message cache marker to the newest block (as Claude Code does each turn). */
function moveMarker(req: Json): void {
  if (!("messages" in req)) return;
  const messages = req.messages as Json[];
  let marker: unknown = null;
  for (const m of messages)
    if (Array.isArray(m.content))
      for (const b of m.content as Json[])
        if (b.cache_control !== undefined) {
          marker = b.cache_control;
          delete b.cache_control;
        }
  const last = messages[messages.length - 1]!;
  if (marker !== null && Array.isArray(last.content))
    (last.content as Json[])[(last.content as Json[]).length - 1]!.cache_control = marker;
}

/** The trace's requests (side calls left out), then `turns` more calls repeating its pairs. */
function session(trace: AgentTrace, turns: number): Json[] {
  const recorded = expandTrace(trace)
    .map((t, i) => ({ t, phase: trace.requests[i]!.phase }))
    .filter((r) => r.phase !== "count_tokens")
    .map((r) => JSON.parse(r.t) as Json);
  const out = [...recorded];
  const template = recorded[recorded.length - 1]!;
  const pairs = pairsOf(template);
  let current = structuredClone(template);
  for (let k = 1; out.length < turns; k++) {
    const pair = pairs[(k - 1) % pairs.length]!;
    const text = JSON.stringify(pair);
    const ids = new Set<string>();
    for (const m of text.matchAll(/"(?:id|tool_use_id|call_id)":"([^"]+)"/g)) ids.add(m[1]!);
    let renamed = text;
    for (const id of ids) renamed = renamed.split(`"${id}"`).join(`"${id}_x${k}"`);
    const [call, result] = JSON.parse(renamed) as [Json, Json];
    markLongest(result, `#${k} `);
    current = structuredClone(current);
    (current[listKey(current)] as Json[]).push(call, result);
    moveMarker(current);
    out.push(current);
  }
  return out.slice(0, turns);
}

interface Run {
  config: string;
  offloaded: number;
  compaction_turn: number | null;
  overflow_turn: number | null;
  batches: { turn: number; results: number; before: number; after: number }[];
  /** Billed dollars per turn. */
  usd: number[];
  prompt: number[];
}

async function runAgent(name: "claude-code" | "codex", turns: number): Promise<Run[]> {
  const trace = loadTrace(name);
  const requests = session(trace, turns);
  const price = resolveModel(trace.default_model)!;
  const window = price.context_window;
  const compactsAt = COMPACTS_AT[name]!(window);
  const fake = new BillingFake();
  fake.script = () => say("ok");
  const path = trace.format === "anthropic" ? "/anthropic/v1/messages" : "/openai/v1/responses";
  const runs: Run[] = [];
  for (const [config, layer] of Object.entries(CONFIGS)) {
    fake.flush();
    const store = new MemoryStore();
    const run: Run = {
      config,
      offloaded: 0,
      compaction_turn: null,
      overflow_turn: null,
      batches: [],
      usd: [],
      prompt: [],
    };
    const offloadedIds = new Set<string>();
    for (const [i, req] of requests.entries()) {
      fake.clock.advance(20);
      const out = await compact({
        format: trace.format,
        request: JSON.stringify(req),
        session: `${name}-${config}`.replace(/[^A-Za-z0-9._:-]/g, "_"),
        store,
        config: layer,
        secret: "agents-bench-secret-0123456789",
      });
      for (const d of out.decisions) if (d.action === "offloaded") offloadedIds.add(d.tool_use_id);
      const p = out.report.pressure;
      if (p !== null && p !== undefined)
        run.batches.push({
          turn: i + 1,
          results: p.offloaded,
          before: p.share_before,
          after: p.share_after,
        });
      const sent = JSON.parse(out.request as string) as Json;
      const res = await fake.fetch(
        new Request(`http://fake${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-fake-conversation": config },
          body: JSON.stringify({ ...sent, stream: false }),
        }),
      );
      if (!res.ok) throw new Error(`${name} ${config} turn ${i + 1}: ${await res.text()}`);
      const call = fake.calls[fake.calls.length - 1]!;
      const t = call.tokens;
      const prompt = t.input + t.cache_read + t.cache_write_5m + t.cache_write_1h;
      run.usd.push(call.usd ?? 0);
      run.prompt.push(prompt);
      if (run.compaction_turn === null && prompt >= compactsAt) run.compaction_turn = i + 1;
      if (run.overflow_turn === null && prompt >= window) run.overflow_turn = i + 1;
    }
    run.offloaded = offloadedIds.size;
    runs.push(run);
  }
  return runs;
}

const money = (x: number) => `$${x.toFixed(3)}`;

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export async function benchAgents(argv: readonly string[] = []): Promise<void> {
  const turns = Number(argv.find((a) => a.startsWith("--turns="))?.split("=")[1] ?? 160);
  const rows: string[][] = [];
  const batchRows: string[][] = [];
  for (const name of ["claude-code", "codex"] as const) {
    const runs = await runAgent(name, turns);
    const none = runs.find((r) => r.config === "none")!;
    const horizon = none.compaction_turn ?? turns;
    const upTo = (r: Run) => r.usd.slice(0, horizon).reduce((n, x) => n + x, 0);
    const total = (r: Run) => r.usd.reduce((n, x) => n + x, 0);
    for (const r of runs) {
      const batchUsd = r.batches.reduce(
        (n, b) => n + (r.usd[b.turn - 1]! - (none.usd[b.turn - 1] ?? 0)),
        0,
      );
      rows.push([
        name,
        r.config,
        String(r.offloaded),
        r.compaction_turn === null ? `none in ${turns}` : String(r.compaction_turn),
        r.overflow_turn === null ? `none in ${turns}` : String(r.overflow_turn),
        String(r.batches.length),
        r.batches.length === 0 ? "—" : money(batchUsd / r.batches.length),
        money(upTo(r)),
        `${(((upTo(r) - upTo(none)) / upTo(none)) * 100).toFixed(1)}%`,
        money(total(r)),
        String(Math.max(...r.prompt)),
      ]);
      for (const b of r.batches.slice(0, 4))
        batchRows.push([
          name,
          r.config,
          String(b.turn),
          String(b.results),
          `${(b.before * 100).toFixed(0)}% → ${(b.after * 100).toFixed(0)}%`,
          money(r.usd[b.turn - 1]!),
          money(none.usd[b.turn - 1]!),
        ]);
    }
  }
  console.log(
    `\nAgents' traces as long sessions (${turns} turns each; billed by the billing fake; the agents compact at their own thresholds)\n${table(
      [
        "agent",
        "config",
        "offloaded",
        "agent compacts at turn",
        "overflow at turn",
        "pressure batches",
        "batch turn − none",
        "bill to none's compaction",
        "vs none",
        "bill, all turns",
        "peak prompt",
      ],
      rows,
    )}`,
  );
  console.log(
    `\nContext-pressure batches (the first four per run)\n${table(
      ["agent", "config", "turn", "results", "window share", "turn billed", "none, same turn"],
      batchRows,
    )}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAgents(process.argv);
