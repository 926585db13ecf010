/**
 * Context pressure against the agents' own compaction, over whole sessions. The recorded request shapes of
 * Claude Code and Codex CLI (test/fixtures/agent-traces) grow into long sessions (bench/lib/agent-session.ts),
 * go through edge-offload under several configs, and are billed by the billing fake (its cache rules and
 * tokenizer). The agent is modelled to the end of the session (bench/lib/agent-compaction.ts, where every
 * assumption and its source is): when a turn's tokens reach its threshold it makes its summary call (billed,
 * through the proxy like any call) and goes on from what it keeps, growing again, compacting again.
 *
 * The configs: no offload (the agent compacts alone), edge-offload's defaults, pressure off, pressure variants
 * (share → target of the agent's window, the "free" declaration, a batch at the agent's own threshold), and
 * the same with every result first sent in full (`tool_result_first_delivery: "full"`), which isolates
 * pressure from the gate's first delivery. Per run it prints, at each checkpoint (160 turns, and the last
 * turn): the bill and its ratio to the agent compacting alone, the agent's compactions, and what is kept:
 * the share of the session's tool results still reachable (whole in the prompt, or behind a stub that one
 * recall reads). The fake model never recalls, so no recall hop is in these bills; it answers "ok" (the
 * agents' own short outputs are left out alike).
 *
 * `npm run bench -- agents` runs 160 turns. Options: `--turns=N` (checkpoints at 160 and N), `--gap=BASE[,LONG@P]`
 * (seconds between calls, as the replay's --gap: caches lapse on long gaps; `--gap=20,900@0.1` is the cold-cache
 * model), `--scenarios=a,b` (claude-code-1m, claude-code-200k, codex; all by default), `--configs=a,b` (only
 * the configs whose name holds one of these, beside the agent's own), `--summary=N` (the agents' summary
 * output tokens, instead of 20,000 for Claude Code and 4,000 for Codex).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { resolveConfig } from "../src/config.ts";
import { compact } from "../src/core/compact.ts";
import { RECALL_OUTPUT_TOKENS_DEFAULT, RECALL_TOKENS_DEFAULT } from "../src/core/gate.ts";
import { type ModelPrice, ratesFor, resolveModel, usd } from "../src/core/pricing.ts";
import { sessionRef } from "../src/core/session.ts";
import { pressureWindow } from "../src/core/turn/pressure.ts";
import type { TurnDecision } from "../src/core/types.ts";
import { type GapModel, gapSeconds, parseGapModel, REPLAY_EPOCH_MS } from "../src/replay/gaps.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { loadTrace } from "../test/support/agent-traces.ts";
import { billUsd } from "../test/support/billing/bill.ts";
import { BillingFake, say } from "../test/support/billing-fake.ts";
import {
  type AgentName,
  type CompactionModel,
  claudeCodeCompaction,
  codexCompaction,
  type Json,
  textOfTokens,
} from "./lib/agent-compaction.ts";
import { AgentSession, reachable } from "./lib/agent-session.ts";

interface Scenario {
  name: string;
  agent: AgentName;
  model: CompactionModel;
  /** What the scenario is, for the table's title. */
  title: string;
}

function scenarios(summary: number | undefined): Scenario[] {
  return [
    {
      name: "claude-code-1m",
      agent: "claude-code",
      model: claudeCodeCompaction(1_000_000, summary),
      title: "Claude Code on claude-opus-5-5, its own 1M window (compacts at 967K)",
    },
    {
      name: "claude-code-200k",
      agent: "claude-code",
      model: claudeCodeCompaction(200_000, summary),
      title:
        "Claude Code on claude-opus-5-5 with CLAUDE_CODE_AUTO_COMPACT_WINDOW=200000 (compacts at 167K)",
    },
    {
      name: "codex",
      agent: "codex",
      model: codexCompaction(500_000, summary),
      title: "Codex CLI on gpt-6.2-sol, its catalog's 500K window (compacts at 450K)",
    },
  ];
}

/** A full collection before each heap reading, so it says what a run holds, not its garbage. */
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heapMb = () => {
  gc();
  return Math.round(process.memoryUsage().heapUsed / 1e6);
};

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

/**
 * A pressure setting: share → target of a window (or off), whether the recall tool is declared "free",
 * and whether every result is first sent in full (`tool_result_first_delivery: "full"`: the gate never
 * stubs a result the model has not read, so what is offloaded is pressure's and the settled gate's).
 */
interface Pressure {
  share: number | null;
  target: number;
  window: number;
  free: boolean;
  full: boolean;
}

const pressureLayer = (p: Pressure): Json => ({
  ...ON,
  tool_result_context_window_tokens: p.window,
  tool_result_context_pressure_share: p.share,
  tool_result_context_pressure_target: p.target,
  ...(p.free ? { tool_result_recall_tool_declaration: "free" } : {}),
  ...(p.full ? { tool_result_first_delivery: "full" } : {}),
});

const pressureName = (p: Pressure) =>
  `${p.full ? "full first delivery, " : ""}${p.share === null ? "pressure off" : `pressure ${p.share}→${p.target} of ${p.window / 1000}K`}${p.free ? " + free" : ""}`;

/** The lower window the variants try where the agent's is larger. */
const LOWER_WINDOW = 200_000;

/**
 * The configs compared; `null` is no offload at all (the agent compacts on its own). The defaults measure
 * against the price table's window (pressureWindow); the variants against the agent's own (which a user
 * sets where they differ), each once: a variant the defaults already are is not run again. The "full first
 * delivery" rows isolate pressure from the gate's first delivery, which stubs a medium result on arrival.
 */
function configs(s: Scenario): [string, Json | null][] {
  const window = s.model.window;
  const at = Math.floor((s.model.threshold / window - 0.02) * 100) / 100;
  const d = resolveConfig({});
  const defaults: Pressure = {
    share: d.tool_result_context_pressure_share,
    target: d.tool_result_context_pressure_target,
    window: pressureWindow(resolveModel(loadTrace(s.agent).default_model), null)!,
    free: d.tool_result_recall_tool_declaration === "free",
    full: d.tool_result_first_delivery === "full",
  };
  const v = (share: number | null, target: number, free = false, full = false): Pressure => ({
    share,
    target,
    window,
    free,
    full,
  });
  const variants: Pressure[] = [
    { ...defaults, share: null },
    v(0.8, 0.5),
    v(0.8, 0.5, true),
    v(0.8, 0.2),
    v(0.5, 0.2),
    v(0.5, 0.2, true),
    v(at, 0.2),
    { ...defaults, share: null, full: true },
    { ...defaults, full: true },
    v(0.8, 0.5, false, true),
    v(0.5, 0.2, false, true),
    // A window below the agent's: smaller prompts every turn, fewer results whole.
    ...(window > LOWER_WINDOW
      ? [
          { ...v(0.5, 0.2), window: LOWER_WINDOW },
          { ...v(0.5, 0.2, false, true), window: LOWER_WINDOW },
        ]
      : []),
  ];
  const same = (a: Pressure, b: Pressure) =>
    JSON.stringify(a) === JSON.stringify(b) ||
    (a.share === null && b.share === null && a.full === b.full);
  return [
    ["agent compacts (no offload)", null],
    [`defaults (${pressureName(defaults)})`, ON],
    ...variants
      .filter((p, i) => !same(p, defaults) && variants.findIndex((w) => same(p, w)) === i)
      .map((p): [string, Json] => [
        `${pressureName(p)}${p.share === at ? " (the agent's threshold)" : ""}`,
        pressureLayer(p),
      ]),
  ];
}

interface Checkpoint {
  turn: number;
  usd: number;
  /** The same calls at claude-sonnet-5-5's rates (Claude Code only). */
  sonnet_usd: number | null;
  compactions: number;
  produced: number;
  reachable: number;
  /** Results behind a stub on this turn, and the turns' mean prompt (what a recall hop re-reads). */
  offloaded: number;
  mean_prompt: number;
  /** The heap the run holds at this turn (after a full collection), in MB. */
  heap: number;
}

interface Run {
  config: string;
  checkpoints: Checkpoint[];
  batches: { turn: number; results: number; before: number; after: number; usd: number }[];
  compaction_usd: number;
  peak: number;
}

async function runSession(
  s: Scenario,
  config: string,
  layer: Json | null,
  turns: number,
  at: readonly number[],
  gap: GapModel | null,
): Promise<Run> {
  const trace = loadTrace(s.agent);
  const session = new AgentSession(trace);
  const fake = new BillingFake();
  fake.script = () => say("ok");
  const store = new MemoryStore({ now: () => REPLAY_EPOCH_MS + fake.clock.now() });
  const id = `${s.name}-${config}`.replace(/[^A-Za-z0-9._:-]/g, "_");
  const ref = sessionRef(id);
  const path = trace.format === "anthropic" ? "/anthropic/v1/messages" : "/openai/v1/responses";
  const sonnet = s.agent === "claude-code" ? "claude-sonnet-5-5" : null;
  const run: Run = { config, checkpoints: [], batches: [], compaction_usd: 0, peak: 0 };
  let usd = 0;
  let sonnetUsd = 0;
  let compactions = 0;
  let prompts = 0;
  /** The last turn's decisions: what each result in its request went out as. */
  let decisions: readonly TurnDecision[] = [];

  const send = async (raw: string, summary = false) => {
    let body = raw;
    let pressure = null;
    if (layer !== null) {
      const out = await compact({
        format: trace.format,
        request: raw,
        session: id,
        store,
        config: layer,
        secret: "agents-bench-secret-0123456789",
      });
      body = out.request as string;
      pressure = out.report.pressure ?? null;
      if (!summary) decisions = out.decisions;
    }
    const json = JSON.parse(body) as Json;
    const res = await fake.fetch(
      new Request(`http://fake${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...json, stream: false }),
      }),
    );
    if (!res.ok) throw new Error(`${id}: ${await res.text()}`);
    const call = fake.calls[fake.calls.length - 1]!;
    const t = call.tokens;
    const prompt = t.input + t.cache_read + t.cache_write_5m + t.cache_write_1h;
    usd += call.usd ?? 0;
    if (sonnet !== null) sonnetUsd += billUsd(sonnet, t) ?? 0;
    run.peak = Math.max(run.peak, prompt);
    return { prompt, output: t.output, usd: call.usd ?? 0, pressure };
  };

  for (let turn = 1; turn <= turns; turn++) {
    fake.clock.advance(gap === null ? 20 : gapSeconds(gap, s.name, turn));
    const c = await send(session.next());
    prompts += c.prompt;
    if (c.pressure !== null)
      run.batches.push({
        turn,
        results: c.pressure.offloaded,
        before: c.pressure.share_before,
        after: c.pressure.share_after,
        usd: c.usd,
      });
    // The agent counts its context from the usage the provider reported, and compacts past its threshold.
    if (c.prompt + c.output >= s.model.threshold) {
      fake.clock.advance(2);
      fake.reply(say(textOfTokens(s.model.summary_out)));
      run.compaction_usd += (await send(session.summaryRequest(s.model), true)).usd;
      session.compact(s.model);
      compactions++;
    }
    if (at.includes(turn)) {
      const kept = await reachable(
        session.produced,
        session.held(),
        decisions,
        async (memId) => (await store.getBody(ref, memId)) !== null,
      );
      run.checkpoints.push({
        turn,
        usd,
        sonnet_usd: sonnet === null ? null : sonnetUsd,
        compactions,
        produced: session.produced.size,
        reachable: kept.reachable,
        offloaded: kept.stubs,
        mean_prompt: prompts / turn,
        heap: heapMb(),
      });
    }
  }
  return run;
}

const money = (x: number) => `$${x.toFixed(2)}`;
const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** One recall hop as the gate prices it: the prompt re-read, what it brings back, the call's output. */
function hopUsd(price: ModelPrice, prompt: number): number {
  const r = ratesFor(price, prompt);
  return (
    usd(prompt, r.cache_read) +
    usd(RECALL_TOKENS_DEFAULT, r.input) +
    usd(RECALL_OUTPUT_TOKENS_DEFAULT, r.output)
  );
}

function render(s: Scenario, gap: string | null, runs: Run[], at: readonly number[]): string {
  const price = resolveModel(loadTrace(s.agent).default_model)!;
  const base = runs[0]!;
  const end = at.at(-1)!;
  const head = ["config", "batches"];
  for (const t of at) head.push(`compactions @${t}`, `kept @${t}`, `bill @${t}`, `vs agent @${t}`);
  head.push(`stubs @${end}`, `break-even recalls @${end}`);
  if (s.agent === "claude-code") head.push(`Sonnet 5.5 @${end}`);
  head.push("peak prompt");
  const rows = runs.map((r) => {
    const row = [r.config, String(r.batches.length)];
    r.checkpoints.forEach((c, i) => {
      const b = base.checkpoints[i]!;
      row.push(
        String(c.compactions),
        `${((c.reachable / c.produced) * 100).toFixed(0)}%`,
        money(c.usd),
        r === base ? "—" : pct(c.usd / b.usd - 1),
      );
    });
    const last = r.checkpoints.at(-1)!;
    const saved = base.checkpoints.at(-1)!.usd - last.usd;
    row.push(
      String(last.offloaded),
      last.offloaded === 0 || saved <= 0
        ? "—"
        : String(Math.floor(saved / hopUsd(price, last.mean_prompt))),
    );
    if (s.agent === "claude-code") row.push(money(last.sonnet_usd!));
    row.push(String(r.peak));
    return row;
  });
  return `\n${s.title}; ${price.id} prices${gap === null ? "" : `; --gap ${gap}`}; summary ${s.model.summary_out} tokens out\n${table(head, rows)}`;
}

export async function benchAgents(argv: readonly string[] = []): Promise<void> {
  const opt = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const turns = Number(opt("turns") ?? 160);
  if (!Number.isInteger(turns) || turns < 20) throw new Error("--turns must be an integer ≥ 20");
  const gapSpec = opt("gap") ?? null;
  const gap = gapSpec === null ? null : parseGapModel(gapSpec);
  const summary = opt("summary") === undefined ? undefined : Number(opt("summary"));
  const wanted = opt("scenarios")?.split(",");
  // Configs whose name holds one of these (the agent's own row is always run: it is the baseline).
  const only = opt("configs")?.split(",");
  const at = [...new Set([Math.min(160, turns), turns])];
  for (const s of scenarios(summary)) {
    if (wanted !== undefined && !wanted.includes(s.name)) continue;
    const runs: Run[] = [];
    for (const [config, layer] of configs(s)) {
      if (only !== undefined && layer !== null && !only.some((o) => config.includes(o))) continue;
      const t0 = performance.now();
      const run = await runSession(s, config, layer, turns, at, gap);
      runs.push(run);
      process.stderr.write(
        `${s.name} ${config}: ${((performance.now() - t0) / 1000).toFixed(0)} s, heap held ${run.checkpoints.map((c) => `${c.heap} MB at turn ${c.turn}`).join(", ")}\n`,
      );
    }
    console.log(render(s, gapSpec, runs, at));
    const batches = runs.flatMap((r) =>
      r.batches
        .slice(0, 3)
        .map((b) => [
          r.config,
          String(b.turn),
          String(b.results),
          `${(b.before * 100).toFixed(0)}% → ${(b.after * 100).toFixed(0)}%`,
          money(b.usd),
        ]),
    );
    if (batches.length > 0)
      console.log(
        `\nits first pressure batches\n${table(["config", "turn", "results", "window share", "turn billed"], batches)}`,
      );
    const agent = runs[0]!;
    console.log(
      `the agent's own summary calls: ${money(agent.compaction_usd)} of its ${money(agent.checkpoints.at(-1)!.usd)}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAgents(process.argv);
