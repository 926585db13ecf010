/**
 * The price table: USD per million tokens, per model (not global multipliers: several models read
 * the cache at 0.05× or 0.025× of input, and OpenAI's newer models charge for writes). Transcribed
 * from the providers' pricing pages as of 2026-12 (sources in the README). Unknown models resolve
 * to null and the gate never fires for them: guessing a price is how a cost optimiser ends up
 * costing money.
 */

export type Provider = "anthropic" | "openai";

export interface Rates {
  input: number;
  /**
   * Anthropic: 5-minute write. OpenAI ≥ 5.6: 30-minute write. Older OpenAI: equal to input (no
   * surcharge).
   */
  cache_write_5m: number;
  /** Anthropic: 1-hour write. OpenAI ≥ 6.1: 12-hour write; otherwise equal to the short write. */
  cache_write_1h: number;
  cache_read: number;
  output: number;
}

export interface ModelPrice extends Rates {
  id: string;
  provider: Provider;
  /** Shortest prefix the provider will cache, in tokens. */
  min_cacheable_tokens: number;
  /** The context window (prompt and output), in tokens: what context-pressure mode measures against. */
  context_window: number;
  /** Above this many prompt tokens the whole request is billed at `long_context` rates. */
  long_context?: { above_tokens: number } & Rates;
  /**
   * The model checks the prefix of every thinking block sent back (Anthropic's preserved thinking): a
   * change to `system`, `tools` or an earlier message after a block was produced fails the request.
   */
  preserved_thinking?: true;
  /**
   * The model takes a tool defined mid-conversation (Anthropic's `tool_addition` block in a `role:
   * "system"` message, beta `inline-tools-2026-09-15`): the recall tool can be declared without
   * touching `tools`.
   */
  inline_tools?: true;
}

type Row = [
  id: string,
  provider: Provider,
  input: number,
  w5m: number,
  w1h: number,
  read: number,
  output: number,
  minCache: number,
];

// Anthropic: ids from 4.6 on are dateless snapshots; earlier ones have dated ids and aliases
// (handled below).
const ROWS: Row[] = [
  ["claude-fable-5-2", "anthropic", 8, 10, 16, 0.2, 40, 512],
  ["claude-mythos-5-2", "anthropic", 8, 10, 16, 0.2, 40, 512],
  ["claude-fable-5-1", "anthropic", 10, 12.5, 20, 0.25, 50, 512],
  ["claude-mythos-5-1", "anthropic", 10, 12.5, 20, 0.25, 50, 512],
  ["claude-fable-5", "anthropic", 10, 12.5, 20, 1, 50, 512],
  ["claude-mythos-5", "anthropic", 10, 12.5, 20, 1, 50, 512],
  ["claude-opus-5-5", "anthropic", 4, 5, 8, 0.2, 20, 512],
  ["claude-opus-5", "anthropic", 5, 6.25, 10, 0.5, 25, 512],
  ["claude-opus-4-8", "anthropic", 5, 6.25, 10, 0.5, 25, 1024],
  ["claude-opus-4-7", "anthropic", 5, 6.25, 10, 0.5, 25, 2048],
  ["claude-opus-4-6", "anthropic", 5, 6.25, 10, 0.5, 25, 4096],
  ["claude-opus-4-5", "anthropic", 5, 6.25, 10, 0.5, 25, 4096],
  ["claude-opus-4-1", "anthropic", 15, 18.75, 30, 1.5, 75, 1024],
  ["claude-opus-4", "anthropic", 15, 18.75, 30, 1.5, 75, 1024],
  ["claude-sonnet-5-5", "anthropic", 2, 2.5, 4, 0.1, 10, 512],
  ["claude-sonnet-5", "anthropic", 2, 2.5, 4, 0.2, 10, 1024],
  ["claude-sonnet-4-6", "anthropic", 3, 3.75, 6, 0.3, 15, 1024],
  ["claude-sonnet-4-5", "anthropic", 3, 3.75, 6, 0.3, 15, 1024],
  ["claude-sonnet-4", "anthropic", 3, 3.75, 6, 0.3, 15, 1024],
  ["claude-haiku-5-5", "anthropic", 0.1, 0.125, 0.2, 0.01, 0.5, 512],
  ["claude-haiku-4-5", "anthropic", 1, 1.25, 2, 0.1, 5, 4096],
  ["claude-3-7-sonnet", "anthropic", 3, 3.75, 6, 0.3, 15, 1024],
  ["claude-3-5-haiku", "anthropic", 0.8, 1, 1.6, 0.08, 4, 2048],
  ["claude-3-haiku", "anthropic", 0.25, 0.3, 0.5, 0.03, 1.25, 2048],
  // OpenAI: writes cost input before 5.6 (no surcharge), 1.25× from 5.6, 2.5× for 12-hour writes on
  // 6.1+.
  ["gpt-6.2-sol", "openai", 2, 2.5, 5, 0.1, 10, 1024],
  ["gpt-6.1-sol", "openai", 2, 2.5, 5, 0.1, 10, 1024],
  ["gpt-6.1-terra", "openai", 1, 1.25, 2.5, 0.05, 5, 1024],
  ["gpt-6-astra", "openai", 10, 12.5, 12.5, 1, 50, 1024],
  ["gpt-6-sol", "openai", 2, 2.5, 2.5, 0.2, 10, 1024],
  ["gpt-6-luna", "openai", 0.1, 0.125, 0.125, 0.01, 0.5, 1024],
  ["gpt-5.6-sol", "openai", 5, 6.25, 6.25, 0.5, 30, 1024],
  ["gpt-5.6", "openai", 5, 6.25, 6.25, 0.5, 30, 1024],
  ["gpt-5.6-terra", "openai", 2, 2.5, 2.5, 0.2, 12, 1024],
  ["gpt-5.6-luna", "openai", 0.2, 0.25, 0.25, 0.02, 1.2, 1024],
  ["gpt-5.5", "openai", 5, 5, 5, 0.5, 30, 1024],
  ["gpt-5.4", "openai", 2.5, 2.5, 2.5, 0.25, 15, 1024],
  ["gpt-5.4-mini", "openai", 0.75, 0.75, 0.75, 0.075, 4.5, 1024],
  ["gpt-5.4-nano", "openai", 0.2, 0.2, 0.2, 0.02, 1.25, 1024],
  ["gpt-5.3-codex", "openai", 1.75, 1.75, 1.75, 0.175, 14, 1024],
  ["gpt-5.2", "openai", 1.75, 1.75, 1.75, 0.175, 14, 1024],
  ["gpt-5.2-codex", "openai", 1.75, 1.75, 1.75, 0.175, 14, 1024],
  ["gpt-5.1", "openai", 1.25, 1.25, 1.25, 0.125, 10, 1024],
  ["gpt-5.1-codex", "openai", 1.25, 1.25, 1.25, 0.125, 10, 1024],
  ["gpt-5", "openai", 1.25, 1.25, 1.25, 0.125, 10, 1024],
  ["gpt-5-codex", "openai", 1.25, 1.25, 1.25, 0.125, 10, 1024],
  ["gpt-5-mini", "openai", 0.25, 0.25, 0.25, 0.025, 2, 1024],
  ["gpt-5-nano", "openai", 0.05, 0.05, 0.05, 0.005, 0.4, 1024],
  ["gpt-4.1", "openai", 2, 2, 2, 0.5, 8, 1024],
  ["gpt-4.1-mini", "openai", 0.4, 0.4, 0.4, 0.1, 1.6, 1024],
  ["gpt-4.1-nano", "openai", 0.1, 0.1, 0.1, 0.025, 0.4, 1024],
  ["gpt-4o", "openai", 2.5, 2.5, 2.5, 1.25, 10, 1024],
  ["gpt-4o-mini", "openai", 0.15, 0.15, 0.15, 0.075, 0.6, 1024],
  ["o1", "openai", 15, 15, 15, 7.5, 60, 1024],
  ["o3", "openai", 2, 2, 2, 0.5, 8, 1024],
  ["o3-mini", "openai", 1.1, 1.1, 1.1, 0.55, 4.4, 1024],
  ["o4-mini", "openai", 1.1, 1.1, 1.1, 0.275, 4.4, 1024],
];

/**
 * Whole-request long-context pricing: [ids, above prompt tokens, factor on input and cache rates,
 * factor on output].
 */
const LONG_CONTEXT: [ids: string[], above: number, inputFactor: number, outputFactor: number][] = [
  [["claude-sonnet-4-5", "claude-sonnet-4"], 200_000, 2, 1.5],
  [["claude-haiku-5-5"], 100_000, 5, 5],
  [
    [
      "gpt-5.4",
      "gpt-5.4-mini",
      "gpt-5.4-nano",
      "gpt-5.5",
      "gpt-5.6",
      "gpt-5.6-sol",
      "gpt-5.6-terra",
      "gpt-5.6-luna",
      "gpt-6-astra",
      "gpt-6-sol",
      "gpt-6-luna",
      "gpt-6.1-sol",
      "gpt-6.1-terra",
      "gpt-6.2-sol",
    ],
    272_000,
    2,
    1.5,
  ],
];

/**
 * Context windows in tokens, from the providers' model pages: Claude Opus 4.7 and later and the 5
 * family 1M natively (platform.claude.com's model pages; Claude Code's own model table agrees), the
 * older Claude models 200K (the 1M-token beta some of them offer is opted into per request: set
 * `tool_result_context_window_tokens`); OpenAI per family. A model not named here takes its
 * provider's default.
 */
const CONTEXT_WINDOWS: [prefixes: string[], tokens: number][] = [
  [
    [
      "claude-opus-4-7",
      "claude-opus-4-8",
      "claude-opus-5",
      "claude-sonnet-5",
      "claude-haiku-5",
      "claude-fable-5",
      "claude-mythos-5",
    ],
    1_000_000,
  ],
  [["gpt-4.1"], 1_047_576],
  [["gpt-4o"], 128_000],
  [["o1", "o3", "o4-mini"], 200_000],
  [["gpt-5.4", "gpt-5.5", "gpt-5.6", "gpt-6"], 1_050_000],
  [["gpt-5"], 400_000],
];
const DEFAULT_WINDOW: Record<Provider, number> = { anthropic: 200_000, openai: 400_000 };

function contextWindowOf(id: string, provider: Provider): number {
  for (const [prefixes, tokens] of CONTEXT_WINDOWS)
    if (prefixes.some((p) => id === p || id.startsWith(`${p}-`) || id.startsWith(`${p}.`)))
      return tokens;
  return DEFAULT_WINDOW[provider];
}

/**
 * The models with preserved thinking, from the supported models of Anthropic's "Prefix checks on
 * thinking blocks" page (platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks,
 * 2026-12): each thinking block sent back is checked against what was sent before it when it was
 * produced, and a request whose history changed there is rejected with a 400 (the default for accounts
 * created from 2026-08-31) or has those blocks dropped. The turn keeps everything before the latest
 * thinking block as it was sent (core/turn/frozen.ts).
 */
const PRESERVED_THINKING: ReadonlySet<string> = new Set([
  "claude-fable-5-2",
  "claude-mythos-5-2",
  "claude-fable-5-1",
  "claude-mythos-5-1",
  "claude-opus-5-5",
  "claude-sonnet-5-5",
  "claude-haiku-5-5",
]);

/**
 * The models that take tool changes mid-conversation (the model profiles Anthropic's SDKs and LangChain
 * publish, 2026-10: Opus 4.8, 5 and 5.5, Sonnet and Haiku 5.5, Fable and Mythos 5 and 5.1; the 5.2 models
 * from the preserved-thinking guide, which has tools added "in a system message").
 */
const INLINE_TOOLS: ReadonlySet<string> = new Set([
  "claude-opus-4-8",
  "claude-opus-5",
  "claude-opus-5-5",
  "claude-sonnet-5-5",
  "claude-haiku-5-5",
  "claude-fable-5",
  "claude-fable-5-1",
  "claude-fable-5-2",
  "claude-mythos-5",
  "claude-mythos-5-1",
  "claude-mythos-5-2",
]);

/** Aliases that do not follow from stripping a date. */
const ALIASES: Record<string, string> = {
  "claude-opus-4-0": "claude-opus-4",
  "claude-sonnet-4-0": "claude-sonnet-4",
  "claude-3-7-sonnet-latest": "claude-3-7-sonnet",
  "claude-3-5-haiku-latest": "claude-3-5-haiku",
  "claude-haiku-3-5": "claude-3-5-haiku",
  "claude-sonnet-3-7": "claude-3-7-sonnet",
  "chatgpt-4o-latest": "gpt-4o",
  "gpt-5-chat-latest": "gpt-5",
  "gpt-5.1-chat-latest": "gpt-5.1",
  "gpt-5.2-chat-latest": "gpt-5.2",
};

export const PRICE_TABLE: ReadonlyMap<string, ModelPrice> = new Map(
  ROWS.map(([id, provider, input, w5m, w1h, read, output, minCache]) => {
    const price: ModelPrice = {
      id,
      provider,
      input,
      cache_write_5m: w5m,
      cache_write_1h: w1h,
      cache_read: read,
      output,
      min_cacheable_tokens: minCache,
      context_window: contextWindowOf(id, provider),
      ...(PRESERVED_THINKING.has(id) ? { preserved_thinking: true as const } : {}),
      ...(INLINE_TOOLS.has(id) ? { inline_tools: true as const } : {}),
    };
    const long = LONG_CONTEXT.find(([ids]) => ids.includes(id));
    if (long !== undefined) {
      const [, above, fi, fo] = long;
      price.long_context = {
        above_tokens: above,
        input: input * fi,
        cache_write_5m: w5m * fi,
        cache_write_1h: w1h * fi,
        cache_read: read * fi,
        output: output * fo,
      };
    }
    return [id, Object.freeze(price)];
  }),
);

/**
 * Normalise the ways clients spell a model: provider prefixes (`anthropic/`, Bedrock's
 * `us.anthropic.…-v1:0`, Vertex's `@20250929`), Claude Code's `[1m]` context marker, dated
 * snapshots (`-20251101`, `-2025-04-14`).
 */
export function normalizeModelId(model: string): string {
  let id = model.trim().toLowerCase();
  id = id.replace(/\[[^\]]*\]$/, "");
  id = id.replace(/^(?:[a-z]{2,4}\.)?anthropic[./]/, "").replace(/^openai\//, "");
  id = id.replace(/-v\d+(?::\d+)?$/, "");
  id = id.replace(/@\d{8}$/, "");
  id = id.replace(/-\d{8}$/, "").replace(/-\d{4}-\d{2}-\d{2}$/, "");
  return ALIASES[id] ?? id;
}

/**
 * The price-table entry of a model id as a client sends it (dated ids and aliases resolve), or null
 * for an unknown model: nothing is offloaded for it, since no saving can be priced.
 */
export function resolveModel(model: string | null | undefined): ModelPrice | null {
  if (typeof model !== "string" || model === "") return null;
  return PRICE_TABLE.get(normalizeModelId(model)) ?? null;
}

/**
 * The rates that apply to a request of `promptTokens` (long-context pricing bills the whole
 * request).
 */
export function ratesFor(price: ModelPrice, promptTokens: number): Rates {
  return price.long_context !== undefined && promptTokens > price.long_context.above_tokens
    ? price.long_context
    : price;
}

/** USD for `tokens` at a per-MTok `rate`. */
export function usd(tokens: number, rate: number): number {
  return (tokens * rate) / 1_000_000;
}
