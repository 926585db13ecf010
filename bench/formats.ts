/**
 * Transform speed per format: the ~1 MB, 40-turn request of the transform bench, converted to each OpenAI
 * format, timed against JSON.parse + JSON.stringify of the same text (interleaved, same run). Steady turn (every
 * result decided earlier) and first sight (a fresh session). The adapters differ only in how they walk the
 * request, so their ratios should be close to Anthropic's. The offload counts differ: the Anthropic request sets
 * no cache_control (priced uncached), while OpenAI caches on its own, so every settled result is priced on the
 * cached side, where re-sending it is cheap and the expected recall hop (re-reading ~290K cached tokens) outweighs
 * the saving for most of them: first sight on OpenAI does less ledger work.
 */
import { compact } from "../src/core/compact.ts";
import { MemoryStore } from "../src/store/memory.ts";
import type { Prompt } from "../test/support/corpus.ts";
import { KITS } from "../test/support/formats.ts";
import { fmt, pairedMedians } from "./lib/stats.ts";
import { composeRequest } from "./transform.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

export async function benchFormats(rounds = 30): Promise<Record<string, Record<string, number>>> {
  const prompt = JSON.parse(composeRequest()) as Prompt;
  const out: Record<string, Record<string, number>> = {};
  for (const kit of KITS) {
    const model = kit.format === "anthropic" ? prompt.model : "gpt-4.1";
    const text = JSON.stringify(kit.fromAnthropic(prompt, model));
    const baseline = () => JSON.stringify(JSON.parse(text));
    const store = new MemoryStore();
    const first = await compact({
      format: kit.format,
      request: text,
      session: "bench",
      store,
      config: ON,
    });
    const [tSteady, tBase] = await pairedMedians(
      () => compact({ format: kit.format, request: text, session: "bench", store, config: ON }),
      baseline,
      rounds,
    );
    let i = 0;
    const [tFresh, tBase2] = await pairedMedians(
      () =>
        compact({
          format: kit.format,
          request: text,
          session: `fresh-${i++}`,
          store: new MemoryStore(),
          config: ON,
        }),
      baseline,
      Math.max(8, rounds >> 2),
    );
    out[kit.format] = {
      request_chars: text.length,
      offloaded: first.report.offloaded,
      steady_ratio: tSteady / tBase,
      first_sight_ratio: tFresh / tBase2,
    };
    console.log(
      `${kit.format.padEnd(17)} ${(text.length / 1e6).toFixed(2)} MB, ${first.report.results} results, ${first.report.offloaded} offloaded · parse+stringify ${fmt(tBase)} ms · steady ${fmt(tSteady)} ms (ratio ${(tSteady / tBase).toFixed(2)}) · first sight ${fmt(tFresh)} ms (ratio ${(tFresh / tBase2).toFixed(2)})`,
    );
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchFormats();
