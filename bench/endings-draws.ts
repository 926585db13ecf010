/**
 * Issue 26, point 7, as a share rather than one draw's count: the realistic endings (src/replay/endings.ts)
 * cut half of the sessions holding a result over the size floor at a drawn point, and which sessions a
 * policy makes dearer depends on where they were cut. One draw of 124 sessions shows 0-4 dearer by luck as
 * much as by design, so this replays K draws (0, the published one, to K-1) and reports per row the ratio
 * to `none` (mean and range), the sessions made dearer in each draw, their share of all the sessions
 * replayed, how many draws keep it at or under 1%, and the worst session of any draw. Run:
 *   npm run bench -- endings-draws [--draws=8] [--files=swe,api,large] [--config=JSON] [--no-usage]
 *     [--hops=kept|dropped] [--runs=model:client,...] [--thinking]
 * --runs replaces the price tables and clients below (e.g. claude-opus-4-8:cached); --thinking opens every
 * assistant message with a thinking block, as a model with preserved thinking answers.
 * With --config a second row per run gives the defaults with those keys, on the same draws.
 */

import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { earlyEndings } from "../src/replay/endings.ts";
import { edgeOffload } from "../src/replay/policies/edge-offload.ts";
import { nonePolicy } from "../src/replay/policies/none.ts";
import type { Policy } from "../src/replay/policy.ts";
import { type HopExchange, replay } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import type { Client } from "../src/replay/types.ts";
import { configFlag, flag, intFlag } from "./lib/args.ts";
import { corpusFile } from "./lib/corpus.ts";

/** The price tables and clients of point 7: both clients at Anthropic's, OpenAI's own caching at its. */
const RUNS: { model: string; client: Client }[] = [
  { model: "claude-sonnet-4-6", client: "cached" },
  { model: "claude-sonnet-4-6", client: "uncached" },
  { model: "claude-opus-4-5", client: "cached" },
  { model: "gpt-5.4", client: "automatic" },
];

/** What one row gathers over the draws. */
interface Tally {
  ratios: number[];
  dearer: number[];
  sessions: number;
  worst: number;
}

export async function benchEndingsDraws(argv: readonly string[]): Promise<void> {
  const draws = intFlag(argv, "draws", 8, 1, 1000);
  const extra = configFlag(argv);
  const files = flag(argv, "files", "swe,api,large").split(",") as ("swe" | "api" | "large")[];
  const hops = flag(argv, "hops", "kept") as HopExchange;
  const usage = !argv.includes("--no-usage");
  const thinking = argv.includes("--thinking");
  const runs = runsFlag(flag(argv, "runs", ""));
  const on = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
  const variants = [
    { name: "edge-offload", config: on, about: "the defaults" },
    ...(extra === null
      ? []
      : [{ name: "edge-offload+config", config: { ...on, ...extra }, about: "custom config" }]),
  ];
  const names = variants.map((v) => v.name);
  // Fresh each replay: a policy keeps its store (ledger, sticky decisions, what it learned), and the
  // draws replay the same session ids.
  const fresh = (): Policy[] => [
    nonePolicy,
    ...variants.map((v) => edgeOffload(v.name, v.config, v.about)),
  ];
  const t0 = performance.now();
  const lines: string[] = [];
  for (const file of files) {
    const raw = parseSessions(gunzipSync(readFileSync(corpusFile(file))).toString("utf8"), file);
    for (const { model, client } of runs) {
      const tallies = names.map((): Tally => ({ ratios: [], dearer: [], sessions: 0, worst: 0 }));
      for (let n = 0; n < draws; n++) {
        const report = await replay(earlyEndings(raw, n), {
          model,
          client,
          policies: fresh(),
          hops,
          usage,
          ...(thinking ? { thinking } : {}),
        });
        report.policies.slice(1).forEach((p, i) => {
          const t = tallies[i]!;
          t.ratios.push(p.ratio_to_none ?? 1);
          t.dearer.push(p.dearer_sessions);
          t.sessions += report.sessions;
          t.worst = Math.max(t.worst, p.worst_session_ratio ?? 0);
        });
      }
      names.forEach((name, i) => {
        const line = row(file, model, client, name, tallies[i]!, raw.length);
        lines.push(line);
        console.log(line);
      });
    }
  }
  console.log(
    `\nendings-draws: ${draws} draws, ${lines.length} rows in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
  console.log(
    "| corpus | prices | client | policy | ratio, mean (range) | dearer per draw | share dearer | draws ≤ 1% | worst |",
  );
  console.log(`|${" --- |".repeat(9)}`);
  for (const l of lines) console.log(l);
}

/** `--runs=model:client,...`, or the runs of point 7 when absent. */
function runsFlag(value: string): { model: string; client: Client }[] {
  if (value === "") return RUNS;
  return value.split(",").map((r) => {
    const [model, client] = r.split(":");
    if (
      model === undefined ||
      model === "" ||
      !["cached", "uncached", "automatic"].includes(client ?? "")
    )
      throw new Error(`--runs: "${r}" is not model:cached|uncached|automatic`);
    return { model, client: client as Client };
  });
}

/** One table row: the ratio's mean and range, the counts, their share, and the worst session. */
function row(
  file: string,
  model: string,
  client: Client,
  policy: string,
  t: Tally,
  perDraw: number,
): string {
  const mean = t.ratios.reduce((a, b) => a + b, 0) / t.ratios.length;
  const total = t.dearer.reduce((a, b) => a + b, 0);
  const within = t.dearer.filter((d) => d <= perDraw * 0.01).length;
  return `| ${file} | ${model.replace("claude-", "")} | ${client} | ${policy} | ${mean.toFixed(3)} (${Math.min(...t.ratios).toFixed(3)}-${Math.max(...t.ratios).toFixed(3)}) | ${t.dearer.join(" ")} | ${((100 * total) / t.sessions).toFixed(2)}% (${total} of ${t.sessions}) | ${within} of ${t.dearer.length} | ${t.worst.toFixed(3)} |`;
}
