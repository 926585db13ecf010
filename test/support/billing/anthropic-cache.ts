/**
 * Anthropic's prompt cache, as documented, applied to one request's blocks and token counts:
 * - a request writes one entry per breakpoint: the hash of the prefix ending at that block (prefixes chain
 *   through every block before it, so a change anywhere invalidates every later entry);
 * - a read walks back from each breakpoint, last first, over at most `lookback` positions counting the
 *   breakpoint itself, and takes the first live entry it meets; with none in that window it goes on from the
 *   previous breakpoint;
 * - a breakpoint whose prefix is shorter than the model's minimum cacheable length neither reads nor writes;
 * - an entry lives for its TTL from the start of the last request that wrote or read it;
 * - billing: with A the tokens up to the hit, B up to the last 1-hour breakpoint after A and C up to the last
 *   breakpoint, A tokens are read, B − A written at the 1-hour rate, C − B at the 5-minute rate, and the rest
 *   is input.
 * Rule variants (no expiry, unlimited lookback, an entry at every block boundary) exist so a bench can measure
 * what each documented rule costs compared with a simpler model; the fake's bill always uses the real rules.
 */
import { createHash } from "node:crypto";
import { type Prompt, TTL_MS, type Ttl } from "./anthropic-prompt.ts";
import { fakePrice } from "./prices.ts";

export interface CacheRules {
  /** Positions a breakpoint looks back over, itself included (the API: 20). */
  lookback: number;
  /** Entries expire after their TTL (the API: yes). Without it an entry lives forever. */
  expiry: boolean;
  /** Where entries are written: at breakpoints (the API), or at every block boundary up to one. */
  entries: "breakpoints" | "every-block";
}

export const API_RULES: Readonly<CacheRules> = {
  lookback: 20,
  expiry: true,
  entries: "breakpoints",
};

/** Below this prompt prefix nothing is cached for a model the fake does not price. */
export const DEFAULT_MIN_CACHEABLE = 1024;

export interface CacheOutcome {
  prompt_tokens: number;
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_write_5m_tokens: number;
  cache_write_1h_tokens: number;
  /** Path of the block the read ended at (null: no hit). */
  hit: string | null;
}

interface Entry {
  expires: number;
  ttl: Ttl;
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

export class AnthropicCache {
  readonly rules: CacheRules;
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(now: () => number, rules: CacheRules = API_RULES) {
    this.#now = now;
    this.rules = rules;
  }

  /** Live entries (for tests). */
  size(): number {
    const now = this.#now();
    return [...this.#entries.values()].filter((e) => this.#live(e, now)).length;
  }

  clear(): void {
    this.#entries.clear();
  }

  #live(e: Entry | undefined, now: number): e is Entry {
    return e !== undefined && (!this.rules.expiry || now < e.expires);
  }

  #keep(key: string, ttl: Ttl, now: number): void {
    const old = this.#entries.get(key);
    const expires = now + TTL_MS[ttl];
    if (old === undefined || !this.#live(old, now) || old.expires < expires)
      this.#entries.set(key, { expires, ttl: old !== undefined && old.ttl === "1h" ? "1h" : ttl });
  }

  /**
   * Bill one request: `tokens` are the tokens of each block of `prompt`. Reads and writes the cache (entries
   * are scoped by `scope` and the model: caches are not shared across organisations or models).
   */
  bill(prompt: Prompt, tokens: readonly number[], scope = ""): CacheOutcome {
    const now = this.#now();
    const { blocks } = prompt;
    const min = fakePrice(prompt.model)?.min_cache ?? DEFAULT_MIN_CACHEABLE;
    const cum: number[] = [];
    const keys: string[] = [];
    let total = 0;
    let chain = sha256(`${scope}\u0000${prompt.model}`);
    blocks.forEach((b, i) => {
      // tool_choice and thinking settings are rendered ahead of the messages: they key every message block.
      if (b.section === "messages" && (i === 0 || blocks[i - 1]!.section !== "messages"))
        chain = sha256(`${chain}|config|${prompt.message_config}`);
      chain = sha256(`${chain}|${b.hash}`);
      keys.push(chain);
      total += tokens[i] ?? 0;
      cum.push(total);
    });
    const marks = blocks.flatMap((b, i) =>
      b.breakpoint !== null && cum[i]! >= min ? [{ i, ttl: b.breakpoint }] : [],
    );
    const outcome: CacheOutcome = {
      prompt_tokens: total,
      input_tokens: total,
      cache_read_input_tokens: 0,
      cache_write_5m_tokens: 0,
      cache_write_1h_tokens: 0,
      hit: null,
    };
    if (marks.length === 0) return outcome;

    const hit = this.#lookup(prompt, keys, marks, now);
    const a = hit < 0 ? 0 : cum[hit]!;
    const last1h = marks.filter((m) => m.ttl === "1h" && cum[m.i]! > a).pop();
    const b = last1h === undefined ? a : cum[last1h.i]!;
    const c = Math.max(a, cum[marks[marks.length - 1]!.i]!);
    outcome.cache_read_input_tokens = a;
    outcome.cache_write_1h_tokens = b - a;
    outcome.cache_write_5m_tokens = c - b;
    outcome.input_tokens = total - c;
    outcome.hit = hit < 0 ? null : blocks[hit]!.path;

    // A read refreshes what it used; every breakpoint writes (or refreshes) its own entry.
    if (hit >= 0) this.#keep(keys[hit]!, this.#entries.get(keys[hit]!)!.ttl, now);
    let from = 0;
    for (const m of marks) {
      if (this.rules.entries === "every-block")
        for (let i = from; i < m.i; i++) this.#keep(keys[i]!, m.ttl, now);
      this.#keep(keys[m.i]!, m.ttl, now);
      from = m.i + 1;
    }
    return outcome;
  }

  /** The block index of the longest live cached prefix the breakpoints' lookback windows reach, or -1. */
  #lookup(prompt: Prompt, keys: readonly string[], marks: { i: number }[], now: number): number {
    const { blocks } = prompt;
    const everyBlock = this.rules.entries === "every-block";
    for (let k = marks.length - 1; k >= 0; k--) {
      let i = marks[k]!.i;
      let checked = 0;
      while (i >= 0 && checked < this.rules.lookback) {
        if (this.#live(this.#entries.get(keys[i]!), now)) return i;
        checked++;
        if (everyBlock) {
          i--;
          continue;
        }
        // The previous position ends at the last block before this block's position starts.
        const position = blocks[i]!.position;
        while (i >= 0 && blocks[i]!.position === position) i--;
      }
    }
    return -1;
  }
}
