/**
 * The providers' cache rules over sketched requests, as documented: Anthropic reads the highest entry a
 * breakpoint's 20-block lookback reaches and writes at breakpoints by TTL; OpenAI reads the longest prefix a
 * live prompt shares in 128-token steps from 1,024 (older models) or an exact entry at a breakpoint, writes
 * billed (GPT-5.6 on); entries live their TTL from their last use, within their scope.
 */
import { describe, expect, it } from "vitest";
import { type CachedMark, type CacheRules, PromptCache } from "../../src/core/provider-cache.ts";

const mark = (tokens: number, blocks: number, hash: string, bp?: "5m" | "1h"): CachedMark => ({
  tokens,
  blocks,
  hash,
  ...(bp === undefined ? {} : { bp }),
});
const ANTHROPIC: CacheRules = { kind: "anthropic", min: 1024, scope: "s" };
const OPENAI: CacheRules = { kind: "openai", min: 1024, scope: "s" };
const WRITES: CacheRules = { kind: "openai-writes", min: 1024, scope: "s" };

describe("Anthropic", () => {
  it("writes at the breakpoint, then reads it from the next request's lookback", () => {
    const cache = new PromptCache();
    const first = [mark(1000, 1, "a"), mark(3000, 5, "b", "5m")];
    expect(cache.bill(first, ANTHROPIC, 0)).toMatchObject({
      read: 0,
      write_5m: 3000,
      write_1h: 0,
      input: 0,
    });
    const next = [mark(1000, 1, "a"), mark(3000, 5, "b"), mark(3500, 8, "c", "5m")];
    expect(cache.bill(next, ANTHROPIC, 1000)).toEqual({
      read: 3000,
      write_5m: 500,
      write_1h: 0,
      input: 0,
      matched: 1,
    });
  });

  it("looks back 20 blocks at most, and entries lapse after their TTL from their last use", () => {
    const cache = new PromptCache();
    cache.bill([mark(3000, 5, "b", "5m")], ANTHROPIC, 0);
    const far = [mark(3000, 5, "b"), mark(9000, 25, "c", "5m")];
    expect(cache.bill(far, ANTHROPIC, 1000).read).toBe(0);
    const near = [mark(3000, 5, "b"), mark(9000, 24, "d", "5m")];
    expect(cache.bill(near, ANTHROPIC, 1000).read).toBe(3000);
    // Read at 1 s: lives until 301 s.
    expect(cache.bill([mark(3000, 5, "b", "5m")], ANTHROPIC, 300_500).read).toBe(3000);
    expect(cache.bill([mark(3000, 5, "b", "5m")], ANTHROPIC, 700_000).read).toBe(0);
  });

  it("caches nothing below the minimum, and nothing without a breakpoint", () => {
    const cache = new PromptCache();
    expect(cache.bill([mark(900, 2, "x", "5m")], ANTHROPIC, 0)).toMatchObject({
      read: 0,
      write_5m: 0,
      write_1h: 0,
      input: 900,
    });
    expect(cache.bill([mark(5000, 2, "y")], ANTHROPIC, 0).input).toBe(5000);
  });

  it("bills 1-hour writes up to the last 1-hour breakpoint, 5-minute writes after, input beyond", () => {
    const cache = new PromptCache();
    const req = [mark(2000, 2, "s", "1h"), mark(6000, 9, "m", "5m"), mark(6500, 10, "tail")];
    expect(cache.bill(req, ANTHROPIC, 0)).toMatchObject({
      read: 0,
      write_1h: 2000,
      write_5m: 4000,
      input: 500,
    });
    // An hour later only the 1-hour entry is left.
    expect(cache.bill(req, ANTHROPIC, 3_000_000)).toMatchObject({
      read: 2000,
      write_1h: 0,
      write_5m: 4000,
      input: 500,
    });
  });
});

describe("OpenAI", () => {
  it("reads the longest shared prefix in 128-token steps, nothing below 1,024, per scope", () => {
    const cache = new PromptCache();
    cache.bill([mark(800, 1, "a"), mark(1300, 2, "b")], OPENAI, 0);
    expect(
      cache.bill([mark(800, 1, "a"), mark(1300, 2, "b"), mark(1900, 3, "c")], OPENAI, 1),
    ).toEqual({ read: 1280, write_5m: 0, write_1h: 0, input: 620, matched: 1 });
    expect(cache.bill([mark(800, 1, "a"), mark(2000, 2, "z")], OPENAI, 2).read).toBe(0);
    expect(
      cache.bill([mark(1300, 2, "b"), mark(1900, 3, "c")], { ...OPENAI, scope: "t" }, 3).read,
    ).toBe(0);
  });

  it("GPT-5.6 on: writes everything past the read, reads entries exactly, no rounding", () => {
    const cache = new PromptCache();
    expect(cache.bill([mark(1000, 1, "a"), mark(1300, 2, "b")], WRITES, 0)).toMatchObject({
      read: 0,
      write_5m: 1300,
      write_1h: 0,
      input: 0,
    });
    expect(
      cache.bill([mark(1000, 1, "a"), mark(1300, 2, "b"), mark(1400, 3, "c")], WRITES, 1),
    ).toEqual({ read: 1300, write_5m: 100, write_1h: 0, input: 0, matched: 1 });
    // No entry was written at "a": a request that shares only that much reads nothing.
    expect(cache.bill([mark(1000, 1, "a"), mark(1500, 2, "q")], WRITES, 2).read).toBe(0);
  });
});
