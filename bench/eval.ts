/**
 * The eval bench (`npm run bench -- eval`), no provider called:
 * - on each corpus file, what `edge-offload eval` would sample (calls the config changes) and what 20 calls
 *   would cost by its estimate, under the recommended config and with medium results first-delivered, and the
 *   candidate pass's time against one replay of the same file (both compact every call once: ratio ≈ 1);
 * - against the fake model of the tests (test/support/eval-model.ts), the three behaviours the eval must tell
 *   apart (recalling, guessing, noisy) end to end, with the verdict it gives each.
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { isOffloadError } from "../src/errors.ts";
import { type EvalOptions, evaluate, planEval } from "../src/eval/evaluate.ts";
import { verdictLine } from "../src/eval/table.ts";
import type { Proportion } from "../src/eval/types.ts";
import { edgeOffload } from "../src/replay/policies/edge-offload.ts";
import { replay } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import { catalogSessions, FakeModel, type ModelMode } from "../test/support/eval-model.ts";
import { corpusFile } from "./lib/corpus.ts";

const MODEL = "claude-sonnet-4-6";
const CONFIGS: Record<string, Record<string, unknown>> = {
  recommended: {},
  "+medium-first-delivery": {
    tool_result_first_delivery: "gated",
    tool_result_first_delivery_min_chars: 8001,
  },
};

const ms = (t: number) => `${Math.round(t)} ms`;
const rate = (p: Proportion) => `${p.agree}/${p.n}`;

async function corpusRows(): Promise<void> {
  console.log(
    "file   config                   sessions  calls  changed  est. 20 calls (Sonnet 4.6)  pass ÷ replay",
  );
  for (const name of ["api", "swe", "large"] as const) {
    const text = gunzipSync(readFileSync(corpusFile(name))).toString("utf8");
    const sessions = parseSessions(text, name);
    const calls = sessions.reduce((n, s) => n + s.calls.length, 0);
    let t = performance.now();
    await replay(sessions, {
      model: MODEL,
      client: "cached",
      policies: [
        edgeOffload(
          "edge-offload",
          { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
          "",
        ),
      ],
    });
    const replayMs = performance.now() - t;
    for (const [label, config] of Object.entries(CONFIGS)) {
      const options: EvalOptions = {
        sessions,
        input: name,
        provider: "anthropic",
        model: MODEL,
        apiKey: "unused",
        config,
      };
      t = performance.now();
      let changed = 0;
      let estimate = "–";
      try {
        const plan = await planEval(options);
        changed = plan.candidates;
        estimate = `$${plan.estimate.expected_usd.toFixed(2)}`;
      } catch (e) {
        if (!isOffloadError(e) || e.type !== "unprocessable") throw e;
      }
      const passMs = performance.now() - t;
      console.log(
        `${name.padEnd(6)} ${label.padEnd(24)} ${String(sessions.length).padStart(8)}  ${String(calls).padStart(5)}  ${String(changed).padStart(7)}  ${estimate.padStart(26)}  ${(passMs / replayMs).toFixed(2).padStart(13)}   (${ms(passMs)} vs ${ms(replayMs)})`,
      );
    }
  }
}

async function fakeRows(): Promise<void> {
  const sessions = parseSessions(
    catalogSessions(6)
      .map((s) => JSON.stringify(s))
      .join("\n"),
    "catalog",
  );
  console.log("\nfake model   A/B     A/A    hops  B÷A billed  verdict");
  for (const mode of ["recalling", "guessing", "noisy"] as ModelMode[]) {
    const model = new FakeModel({ mode, seed: 11 });
    const url = await model.start();
    try {
      const r = await evaluate({
        sessions,
        provider: "anthropic",
        model: MODEL,
        apiKey: "unused",
        baseUrl: url,
        yes: true,
        concurrency: 1,
      });
      console.log(
        `${mode.padEnd(11)} ${rate(r.ab.agree).padStart(5)}  ${rate(r.aa.agree).padStart(5)}  ${String(r.hops.total).padStart(5)}  ${r.spend.b_over_a!.toFixed(3).padStart(10)}  ${verdictLine(r)}`,
      );
    } finally {
      await model.stop();
    }
  }
}

export async function benchEval(): Promise<void> {
  await corpusRows();
  await fakeRows();
}

if (import.meta.url === `file://${process.argv[1]}`) await benchEval();
