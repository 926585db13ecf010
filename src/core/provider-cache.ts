/**
 * The providers' prompt caches as documented, run over sketched requests (sketch.ts): what each
 * request reads from the cache, writes to it and pays at the input rate, given the requests before
 * it. The billing counterfactual runs one of these over the client's own requests and one over the
 * requests sent, and sets the difference against the bill.
 *
 * Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): entries are
 * written only at breakpoints (up to 4; top-level automatic caching puts one on the last block),
 * when the prefix reaches the model's minimum; each breakpoint looks back at most 20 blocks for an
 * entry and the read is the highest hit; an entry lives 5 minutes (or 1 hour) from its last use;
 * writes are billed by lifetime: 1-hour writes up to the last 1-hour breakpoint after the read,
 * 5-minute writes from there to the last breakpoint; tokens after the last breakpoint are input.
 *
 * OpenAI (https://developers.openai.com/api/docs/guides/prompt-caching): models before GPT-5.6
 * cache every prompt of 1,024 tokens or more on their own; a later prompt reads the longest prefix
 * it shares with a live cached prompt, in steps of 128 tokens, and writes cost nothing extra;
 * entries stay "5 to 10 minutes of inactivity, up to one hour" (taken here as 10 minutes). Models
 * that bill writes (GPT-5.6 on: the price table's write rate above input) cache at breakpoints: an
 * implicit one at the end of the newest message and the client's `prompt_cache_breakpoint`s, read
 * "exactly at a breakpoint" without 128-token rounding, write at 1.25× input, and keep an entry at
 * least 30 minutes. `prompt_cache_key` routes requests: entries are kept per key (and per model).
 *
 * A request here is its marks only: a read is found at a mark or not at all, which is the sketch's
 * promise (never a read across a changed prefix).
 */
import type { Breakpoint } from "./formats/types.ts";

export interface CachedMark {
  /** Prompt tokens before the mark (the last mark ends the prompt). */
  tokens: number;
  /** Blocks before the mark (the lookback counts them). */
  blocks: number;
  hash: string;
  bp?: Breakpoint["ttl"];
}

export type CacheKind = "anthropic" | "openai" | "openai-writes";

export interface CacheRules {
  kind: CacheKind;
  /** Shortest cacheable prefix, in tokens. */
  min: number;
  /** Entries are shared within a scope (the model, OpenAI's `prompt_cache_key`). */
  scope: string;
}

/** Prompt tokens of a request by the rate they are billed at. */
export interface CacheSplit {
  read: number;
  write_5m: number;
  write_1h: number;
  input: number;
}

/** A request billed: its split, and the mark its cached prefix ended at (-1: none matched). */
export interface CacheBill extends CacheSplit {
  matched: number;
}

export const ANTHROPIC_LOOKBACK_BLOCKS = 20;
export const OPENAI_CACHE_STEP = 128;
const TTL_MS = { "5m": 300_000, "1h": 3_600_000 } as const;
const OPENAI_TTL_MS = 600_000;
const OPENAI_WRITES_TTL_MS = 1_800_000;
/**
 * Cached prompts kept per scope (OpenAI's automatic caching): the oldest go first. A session's own
 * recent prompts are the ones its next request shares a prefix with.
 */
const OPENAI_PROMPTS_KEPT = 8;

interface Entry {
  expires: number;
  ttl: number;
}

interface CachedPrompt extends Entry {
  hashes: Set<string>;
}

/** One provider cache, fed requests in order (`at`: each request's time, ms). */
export class PromptCache {
  /** Entries by scope, then by prefix hash. */
  readonly #entries = new Map<string, Map<string, Entry>>();
  readonly #prompts = new Map<string, CachedPrompt[]>();

  bill(marks: readonly CachedMark[], rules: CacheRules, at: number): CacheBill {
    if (marks.length === 0) return { read: 0, write_5m: 0, write_1h: 0, input: 0, matched: -1 };
    if (rules.kind === "openai") return this.#automatic(marks, rules, at);
    return this.#breakpoints(marks, rules, at);
  }

  #scope(scope: string): Map<string, Entry> {
    let entries = this.#entries.get(scope);
    if (entries === undefined) this.#entries.set(scope, (entries = new Map()));
    return entries;
  }

  #breakpoints(marks: readonly CachedMark[], rules: CacheRules, at: number): CacheBill {
    const total = marks[marks.length - 1]!.tokens;
    const anthropic = rules.kind === "anthropic";
    const bps = marks
      .map((m, i) => ({ m, i }))
      .filter(({ m, i }) => m.bp !== undefined || (!anthropic && i === marks.length - 1));
    const entries = this.#scope(rules.scope);
    let read = 0;
    let matched = -1;
    let hit: Entry | undefined;
    for (const { m: bp, i } of bps) {
      // Anthropic looks back from each breakpoint; OpenAI matches a breakpoint's prefix anywhere.
      for (let j = i; j >= 0; j--) {
        const m = marks[j]!;
        if (anthropic && m.blocks <= bp.blocks - ANTHROPIC_LOOKBACK_BLOCKS) break;
        const e = entries.get(m.hash);
        if (e === undefined || e.expires <= at) continue;
        if (m.tokens > read) [read, hit, matched] = [m.tokens, e, j];
        break;
      }
    }
    if (hit !== undefined) hit.expires = at + hit.ttl;
    const last = bps[bps.length - 1]?.m;
    if (last === undefined || last.tokens < rules.min || last.tokens <= read)
      return { read, write_5m: 0, write_1h: 0, input: total - read, matched };
    const long = bps.filter(({ m }) => m.bp === "1h" && m.tokens > read).at(-1)?.m.tokens ?? read;
    for (const { m } of bps) {
      if (m.tokens <= read || m.tokens < rules.min) continue;
      const ttl = anthropic ? TTL_MS[m.bp ?? "5m"] : OPENAI_WRITES_TTL_MS;
      entries.set(m.hash, { expires: at + ttl, ttl });
    }
    return {
      read,
      write_1h: long - read,
      write_5m: last.tokens - long,
      input: total - last.tokens,
      matched,
    };
  }

  #automatic(marks: readonly CachedMark[], rules: CacheRules, at: number): CacheBill {
    const total = marks[marks.length - 1]!.tokens;
    const live = (this.#prompts.get(rules.scope) ?? []).filter((p) => p.expires > at);
    let shared = 0;
    let matched = -1;
    let used: CachedPrompt | undefined;
    for (const p of live)
      for (let j = marks.length - 1; j >= 0; j--) {
        if (!p.hashes.has(marks[j]!.hash)) continue;
        if (marks[j]!.tokens > shared) [shared, used, matched] = [marks[j]!.tokens, p, j];
        break;
      }
    const read =
      shared >= rules.min ? Math.floor(shared / OPENAI_CACHE_STEP) * OPENAI_CACHE_STEP : 0;
    if (read > 0 && used !== undefined) used.expires = at + used.ttl;
    if (total >= rules.min)
      live.push({
        hashes: new Set(marks.map((m) => m.hash)),
        expires: at + OPENAI_TTL_MS,
        ttl: OPENAI_TTL_MS,
      });
    this.#prompts.set(rules.scope, live.slice(-OPENAI_PROMPTS_KEPT));
    return { read, write_5m: 0, write_1h: 0, input: total - read, matched };
  }
}
