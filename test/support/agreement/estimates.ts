/**
 * The replay's own arithmetic applied to the bytes the fake received: its token estimates as a counter the
 * fake can bill with (so one ledger differs from the replay only by the cache rules), and its cache
 * simulation over each conversation's requests (so the bytes can be compared with what the replay simulated).
 */

import { resolveModel } from "../../../src/core/pricing.ts";
import { RECALL_TOOL_NAME } from "../../../src/core/recall-tool.ts";
import { BlockCache } from "../../../src/replay/blocks.ts";
import { CacheSim } from "../../../src/replay/cache.ts";
import { RECALL_CALL_OUTPUT_TOKENS } from "../../../src/replay/run.ts";
import type { Request } from "../../../src/replay/types.ts";
import type { AnswerBlock, TokenCounter } from "../billing/counter.ts";

const blocks = new BlockCache();
/** Each request's estimates, computed once for every ledger that bills it. */
const perRequest = new WeakMap<object, number[]>();

/** Output the replay charges for an answer: its block estimates, or 60 tokens per recall call. */
export function estimatedOutput(content: readonly AnswerBlock[]): number {
  const recalls = content.filter((b) => b.type === "tool_use" && b.name === RECALL_TOOL_NAME);
  if (recalls.length > 0 && recalls.length === content.length)
    return RECALL_CALL_OUTPUT_TOKENS * recalls.length;
  return blocks.tokensOf({ role: "assistant", content: content as never });
}

/**
 * The replay's token estimates, block by block. The replay counts `tools` as one block and the system prompt
 * as one: their tokens go on the last tool and the last system block, the others count 0.
 */
export const estimateCounter: TokenCounter = {
  prompt(prompt, request) {
    let est = perRequest.get(request);
    if (est === undefined) {
      est = blocks.blocksOf(request as unknown as Request).map((b) => b.tokens);
      perRequest.set(request, est);
    }
    const sections = prompt.blocks.map((b) => b.section);
    const out: number[] = [];
    let k = 0;
    sections.forEach((s, i) => {
      const lastOfSection = s === "messages" || sections[i + 1] !== s;
      out.push(lastOfSection ? est[k++]! : 0);
    });
    if (k !== est.length)
      throw new Error(`the replay sees ${est.length} blocks where the fake sees ${k}`);
    return out;
  },
  output: estimatedOutput,
};

/** The replay's cache simulation, one per conversation, over the requests the fake received. */
export class ReplayPricer {
  readonly #model: string;
  readonly #sims = new Map<string, { sim: CacheSim; blocks: BlockCache }>();

  constructor(model: string) {
    this.#model = model;
  }

  /** The replay's price of one received request and its answer. */
  price(conversation: string, request: Record<string, unknown>, answer: readonly AnswerBlock[]) {
    let s = this.#sims.get(conversation);
    if (s === undefined) {
      s = { sim: new CacheSim(resolveModel(this.#model)!), blocks: new BlockCache() };
      this.#sims.set(conversation, s);
    }
    return s.sim.call(s.blocks.blocksOf(request as unknown as Request), estimatedOutput(answer));
  }
}
