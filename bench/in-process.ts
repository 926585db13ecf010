/**
 * What `offloadFetch` adds to a provider call in the app's own process, against a plain `fetch` of the same
 * request to the same fake provider on 127.0.0.1 (interleaved, same run; the ratio is the result).
 *
 * - A steady turn: the session's decisions are all taken (a warm-up turn took them), so the call reads the
 *   session's state, replays each decision by its id and sends. Two requests: the ~1 MB, 40-turn request of
 *   the transform bench (real sessions, its large results already offloaded), and a small turn with nothing
 *   to offload (the pure bookkeeping cost).
 * - The plain fetch sends the client's request as it is; offloadFetch sends the compacted one (so on the
 *   1 MB request it uploads less: that is part of what it buys).
 */
import { offloadFetch } from "../src/integrations/fetch.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { FakeProvider } from "../test/clients/fake-provider.ts";
import { anthropicMessage, anthropicRequest, ON } from "../test/support/providers.ts";
import { smallTurns } from "./lib/requests.ts";
import { fmt, pairedMedians } from "./lib/stats.ts";
import { composeRequest } from "./transform.ts";

const ANSWER = anthropicMessage("msg_bench", [{ text: "ok" }], { input: 10, output: 1 });

export async function benchInProcess(rounds = 40): Promise<void> {
  const fake = new FakeProvider();
  const base = await fake.start();
  const url = `${base}/v1/messages`;
  const headers = { "content-type": "application/json", "x-api-key": "sk-bench" };
  try {
    const requests: [string, string][] = [
      ["1 MB, 40 turns, large results offloaded", retarget(composeRequest())],
      [
        "small turn, nothing to offload",
        JSON.stringify(anthropicRequest({ messages: smallTurns() })),
      ],
    ];
    for (const [name, body] of requests) {
      const store = new MemoryStore();
      const ours = offloadFetch({
        store,
        session: "bench",
        secret: "bench-secret-0123456789abcdef",
        config: ON,
        log: () => {},
      });
      const call = async (f: typeof fetch) => {
        fake.reply({ json: ANSWER });
        const res = await f(url, { method: "POST", headers, body });
        await res.json();
      };
      await call(ours); // the warm-up turn takes the decisions
      const sent = fake.received.at(-1)!.body.length;
      const [plain, offloaded] = await pairedMedians(
        () => call(fetch),
        () => call(ours),
        rounds,
      );
      console.log(
        `offloadFetch, steady turn (${name}): plain fetch ${fmt(plain)} ms, offloadFetch ${fmt(offloaded)} ms, ratio ${(offloaded / plain).toFixed(2)}× (request ${kb(body.length)} → sent ${kb(sent)})`,
      );
    }
  } finally {
    await fake.stop();
  }
}

/** The transform bench's request, for a model the price table knows (so its large results offload). */
function retarget(text: string): string {
  return JSON.stringify({ ...(JSON.parse(text) as object), model: "claude-sonnet-4-6" });
}

function kb(chars: number): string {
  return `${Math.round(chars / 1024)} KB`;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchInProcess();
