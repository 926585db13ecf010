/**
 * The billing fake's own price list: the few models the tests and benches bill, transcribed from the
 * providers' pricing pages (not read from the project's table, which the fake exists to check).
 * - https://platform.claude.com/docs/en/about-claude/pricing: "Base input tokens | 5m cache writes | 1h
 *   cache writes | Cache hits and refreshes | Output tokens"; Claude Sonnet 4.6 $3 / $3.75 / $6 / $0.30 /
 *   $15, Opus 4.5 $5 / $6.25 / $10 / $0.50 / $25, Haiku 4.5 $1 / $1.25 / $2 / $0.10 / $5 per MTok.
 *   Minimum cacheable prompt (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
 *   1,024 tokens for Sonnet 4.6, 4,096 for Opus 4.5 and Haiku 4.5. Opus 5.5
 *   (https://platform.claude.com/docs/en/models/opus-5-5/overview): $4 / $5 / $8 / $0.20 / $20, 512.
 * - https://developers.openai.com/api/docs/pricing: gpt-4.1 $2 input / $0.50 cached / $8 output; gpt-5.4
 *   $2.50 / $0.25 / $15; gpt-5.6 $5 / $0.50 / $30 with cache writes at "1.25× the uncached input token
 *   rate" (https://developers.openai.com/api/docs/guides/prompt-caching), $6.25. Caching starts at 1,024
 *   tokens for every model. Earlier models bill a cache write as plain input. Long context: "For models
 *   with a 1.05M context window (GPT-5.4 and later), prompts with more than 272K input tokens are priced at
 *   2x input and 1.5x output for the full session" (the pricing page; gpt-5.4 past 272K: $5 input, $22.50
 *   output), cached input and writes doubled with input.
 */

export interface FakePrice {
  input: number;
  write_5m: number;
  write_1h: number;
  read: number;
  output: number;
  /** Shortest cacheable prefix in tokens. */
  min_cache: number;
  /** OpenAI: the model caches at breakpoints and bills writes (GPT-5.6 and later). */
  breakpoints?: boolean;
  /**
   * Anthropic: the model takes `role: "system"` messages in `messages` (and tools defined there).
   * https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages opened with Opus
   * 4.8 ("available on Claude Opus 4.8 only"); the fake takes them on the later models it prices (the 5.5
   * ones) and answers the earlier ones 400, as that page says of "unsupported models".
   */
  system_messages?: boolean;
  /** Past this many prompt tokens the whole call is billed at input ×`input`, output ×`output`. */
  long?: { above: number; input: number; output: number };
}

/** OpenAI's long-context tier of its 1.05M-window models. */
const OPENAI_LONG = { above: 272_000, input: 2, output: 1.5 };

const PRICES: Record<string, FakePrice> = {
  "claude-sonnet-4-6": {
    input: 3,
    write_5m: 3.75,
    write_1h: 6,
    read: 0.3,
    output: 15,
    min_cache: 1024,
  },
  "claude-opus-4-5": {
    input: 5,
    write_5m: 6.25,
    write_1h: 10,
    read: 0.5,
    output: 25,
    min_cache: 4096,
  },
  "claude-haiku-4-5": {
    input: 1,
    write_5m: 1.25,
    write_1h: 2,
    read: 0.1,
    output: 5,
    min_cache: 4096,
  },
  "gpt-4.1": { input: 2, write_5m: 2, write_1h: 2, read: 0.5, output: 8, min_cache: 1024 },
  "gpt-5.4": {
    input: 2.5,
    write_5m: 2.5,
    write_1h: 2.5,
    read: 0.25,
    output: 15,
    min_cache: 1024,
    long: OPENAI_LONG,
  },
  "claude-opus-5-5": {
    input: 4,
    write_5m: 5,
    write_1h: 8,
    read: 0.2,
    output: 20,
    min_cache: 512,
    system_messages: true,
  },
  // The agents bench's Sonnet prices: the project's transcription (Opus 5.5's rates halved), not
  // re-checked here (no source at hand).
  "claude-sonnet-5-5": {
    input: 2,
    write_5m: 2.5,
    write_1h: 4,
    read: 0.1,
    output: 10,
    min_cache: 512,
    system_messages: true,
  },
  "gpt-5.6": {
    input: 5,
    write_5m: 6.25,
    write_1h: 6.25,
    read: 0.5,
    output: 30,
    min_cache: 1024,
    breakpoints: true,
    long: OPENAI_LONG,
  },
  // The agents bench's Codex model: the project's transcription of the pricing page, not re-checked
  // here (no source at hand); a later family, so it caches at breakpoints and bills writes.
  "gpt-6.2-sol": {
    input: 2,
    write_5m: 2.5,
    write_1h: 5,
    read: 0.1,
    output: 10,
    min_cache: 1024,
    breakpoints: true,
    long: OPENAI_LONG,
  },
};

/** The price of a model id (a dated snapshot, `-YYYY-MM-DD`, reads as its model), or null. */
export function fakePrice(model: string): FakePrice | null {
  return PRICES[model] ?? PRICES[model.replace(/-\d{4}-\d{2}-\d{2}$/, "")] ?? null;
}
