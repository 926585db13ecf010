/**
 * Why a session costs more under edge-offload than under no policy, call by call (issue 26, point 7):
 * for each session the policy makes dearer, what each call cost under both, and what edge-offload
 * decided on it (the results it stubbed, on first delivery or not, with the gate's horizon, recall
 * probability and net; the anchor; the recall tool's declaration; the recall hops). Realistic endings
 * (src/replay/endings.ts) by default. Run:
 *   npm run bench -- endings-explain [--config=JSON] [--files=swe,api,large]
 *     [--models=claude-sonnet-4-6,gpt-5.4] [--clients=cached,uncached,automatic] [--endings=early|recorded]
 *     [--hops=kept|dropped] [--no-usage] [--sessions=id,id] [--draw=N]
 * (by default, cached with Anthropic's prices and automatic, OpenAI's caching, with OpenAI's; uncached
 * with both: for OpenAI a bound, no client of it is never cached)
 * `--sessions` explains the sessions named, dearer or not (to see why a change moved one); `--draw` another
 * draw of the realistic endings (endings-draws.ts counts them over many).
 * e.g. `--config='{"tool_result_medium_tier":"off"}' --models=gpt-5.4 --clients=uncached`.
 */

import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { CompactOutput } from "../src/core/compact.ts";
import { resolveModel } from "../src/core/pricing.ts";
import { ENDINGS_MIN_CHARS, earlyEndings } from "../src/replay/endings.ts";
import { edgeOffload } from "../src/replay/policies/edge-offload.ts";
import { nonePolicy } from "../src/replay/policies/none.ts";
import { type CallEvent, DEARER_EPSILON, type HopExchange, replay } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import type { Client } from "../src/replay/types.ts";
import { configFlag, flag, intFlag } from "./lib/args.ts";
import { corpusFile } from "./lib/corpus.ts";

const f = (x: number) => x.toFixed(4);

export async function benchEndingsExplain(argv: readonly string[]): Promise<void> {
  const extra = configFlag(argv) ?? {};
  const files = flag(argv, "files", "swe,api,large").split(",") as ("swe" | "api" | "large")[];
  const models = flag(argv, "models", "claude-sonnet-4-6,gpt-5.4").split(",");
  const clients = flag(argv, "clients", "cached,uncached,automatic").split(",") as Client[];
  const clientsAsked = argv.some((a) => a.startsWith("--clients="));
  const early = flag(argv, "endings", "early") === "early";
  const draw = intFlag(argv, "draw", 0, 0, 1_000_000);
  const hops = flag(argv, "hops", "kept") as HopExchange;
  // as the replay bench: the gate hears its calls' usage and calibrates, unless told not to
  const usage = !argv.includes("--no-usage");
  const named = flag(argv, "sessions", "");
  const chosen = named === "" ? null : new Set(named.split(","));
  const config = {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    ...extra,
  };
  console.log(
    "per call: its cost under none and under the defaults (r/w/i: tokens read from the cache, written, billed at input), HOP: a recall hop, Δ and cum: the defaults' extra cost, then what was decided on that call",
  );
  for (const file of files) {
    const raw = parseSessions(gunzipSync(readFileSync(corpusFile(file))).toString("utf8"), file);
    const sessions = early ? earlyEndings(raw, draw) : raw;
    const cutIds = new Set(
      sessions.filter((s, i) => s.calls.length < raw[i]!.calls.length).map((s) => s.id),
    );
    for (const model of models)
      for (const client of clients) {
        // automatic follows OpenAI's rules (OpenAI models only); unasked, an OpenAI model gets it for cached
        const openai = resolveModel(model)?.provider === "openai";
        if (client === "automatic" ? !openai : openai && client === "cached" && !clientsAsked)
          continue;
        const events: CallEvent[] = [];
        const decided = new Map<string, string[]>();
        const policy = edgeOffload("edge-offload", config, "", {
          observe: (session: string, call: number, out: CompactOutput<string>) => {
            const notes: string[] = [];
            for (const d of out.decisions) {
              if (d.sticky) continue;
              const g = d.gate;
              const gate =
                g === undefined
                  ? ""
                  : ` H=${g.inputs.horizon.toFixed(1)} p=${g.inputs.recall_probability.toFixed(2)} first=${g.inputs.first_delivery ? 1 : 0} net=${f(g.net_usd)} save=${f(g.reprefill_saving_usd)} recall=${f(g.expected_recall_hop_cost_usd)} decl=${f(g.tool_declaration_cost_usd)} inval=${f(g.invalidation_cost_usd)}`;
              if (d.action !== "kept" || (g !== undefined && d.chars > ENDINGS_MIN_CHARS))
                notes.push(
                  `${d.action} ${d.tool_name} ${d.chars}ch ${d.tokens}→${d.sent_tokens}t${gate}`,
                );
            }
            if (out.report.anchor?.placed) notes.push(`anchor ${out.report.anchor.reason}`);
            if (out.report.recall_tool === "added") notes.push("recall tool declared");
            const key = `${session}#${call}`;
            decided.set(key, [...(decided.get(key) ?? []), ...notes]);
          },
        });
        const report = await replay(sessions, {
          model,
          client,
          policies: [nonePolicy, policy],
          hops,
          usage,
          onCall: (e) => events.push(e),
        });
        const [none, eo] = report.policies;
        const paired = eo!.sessions.map((r, i) => ({ r, base: none!.sessions[i]! }));
        const dearer = paired.filter(({ r, base }) => r.usd > base.usd * (1 + DEARER_EPSILON));
        // Named sessions are replayed with the whole file all the same: what the gate learned from the
        // sessions before them (horizon, calibration) is part of why they cost what they cost.
        const shown = chosen === null ? dearer : paired.filter(({ r }) => chosen.has(r.session));
        console.log(
          `\n## ${file} ${model} ${client}: ratio ${eo!.ratio_to_none!.toFixed(3)}, worst ${eo!.worst_session_ratio!.toFixed(3)}, ${dearer.length} dearer of ${report.sessions}`,
        );
        if (chosen !== null)
          for (const id of chosen)
            if (!paired.some(({ r }) => r.session === id))
              console.log(`(no session ${id} in ${file})`);
        for (const { r, base } of shown) {
          console.log(
            `\n### ${r.session}${cutIds.has(r.session) ? " (cut)" : ""}: ${f(r.usd)} vs ${f(base.usd)} = ${(r.usd / base.usd).toFixed(4)}, ${r.calls} calls, ${r.recall_hops} hops`,
          );
          const of = (p: string) => events.filter((e) => e.session === r.session && e.policy === p);
          const n = of("none");
          const o = of("edge-offload");
          let cum = 0;
          for (const e of n) {
            const mine = o.filter((x) => x.call === e.call);
            const cost = mine.reduce((s, x) => s + x.cost.usd, 0);
            cum += cost - e.cost.usd;
            const notes = decided.get(`${r.session}#${e.call}`) ?? [];
            const c = mine[0]!.cost;
            console.log(
              `${String(e.call).padStart(3)} none ${f(e.cost.usd)} (r${e.cost.read_tokens} w${e.cost.write_tokens} i${e.cost.input_tokens}) eo ${f(cost)} (r${c.read_tokens} w${c.write_tokens} i${c.input_tokens})${mine.length > 1 ? " HOP" : ""} Δ${f(cost - e.cost.usd)} cum ${f(cum)}${notes.length ? `  | ${notes.join("; ")}` : ""}`,
            );
          }
        }
      }
  }
}
