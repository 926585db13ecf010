/**
 * How the billing fake turns a prompt's blocks and an answer into tokens. The default counter is the fake's
 * tokenizer plus the framing the API adds; a bench can plug in another one (the project's own estimates) to
 * bill the same bytes under the same cache rules with other token counts, and so tell a tokenizer gap from a
 * cache-rule gap.
 */
import type { Prompt, PromptBlock } from "./anthropic-prompt.ts";
import { countTokens } from "./tokenizer.ts";

export type AnswerBlock = Record<string, unknown> & { type: string };

export interface TokenCounter {
  /** Tokens of each prompt block, in prompt order (`request` is the request as parsed). */
  prompt(prompt: Prompt, request: Record<string, unknown>): number[];
  /** Output tokens of an answer's content. */
  output(content: readonly AnswerBlock[]): number;
}

/** Framing per block (block delimiters) and per message (the role marker). */
export const BLOCK_OVERHEAD = 3;
export const MESSAGE_OVERHEAD = 3;

/**
 * The system prompt the API adds when `tools` is non-empty, in tokens: 346 with `tool_choice` auto or none,
 * 313 with any or tool (the figures the tool-use pricing table gives for the current 4.5 models).
 */
export function toolSystemPromptTokens(toolChoice: string): number {
  return toolChoice === "any" || toolChoice === "tool" ? 313 : 346;
}

/** Token counts of texts already seen, by the block hash (the same blocks come back on every turn). */
const memo = new Map<string, number>();

function blockTokens(b: PromptBlock): number {
  let n = memo.get(b.hash);
  if (n === undefined) {
    n = countTokens(b.text);
    memo.set(b.hash, n);
  }
  return n + b.fixed_tokens + BLOCK_OVERHEAD + (b.message_start ? MESSAGE_OVERHEAD : 0);
}

function answerBlockText(b: AnswerBlock): string {
  if (b.type === "text") return String(b.text ?? "");
  if (b.type === "tool_use") return `${String(b.name ?? "")}\n${JSON.stringify(b.input ?? {})}`;
  return JSON.stringify(b);
}

/** The fake's own counter: its tokenizer on each block's text, plus framing. */
export const tokenizerCounter: TokenCounter = {
  prompt(prompt) {
    const out = prompt.blocks.map(blockTokens);
    const firstTool = prompt.blocks.findIndex((b) => b.section === "tools");
    if (firstTool >= 0) out[firstTool]! += toolSystemPromptTokens(prompt.tool_choice);
    return out;
  },
  output(content) {
    return content.reduce((n, b) => n + countTokens(answerBlockText(b)) + BLOCK_OVERHEAD, 0);
  },
};
