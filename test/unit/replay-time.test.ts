/** The replay's timeline: cache TTLs in the simulation, the gap model, request-log timestamps. */
import { describe, expect, it } from "vitest";
import { resolveModel } from "../../src/core/pricing.ts";
import { CacheSim } from "../../src/replay/cache.ts";
import {
  callTimes,
  gapSeconds,
  parseGapModel,
  REPLAY_EPOCH_MS,
  timestampOf,
} from "../../src/replay/gaps.ts";
import { parseSessions } from "../../src/replay/sessions.ts";

const sonnet = resolveModel("claude-sonnet-4-6")!;
const b = (key: string, tokens: number, bp?: "5m" | "1h") => ({
  key,
  tokens,
  ...(bp === undefined ? {} : { breakpoint: true, ...(bp === "1h" ? { ttl: bp } : {}) }),
});

describe("cache TTLs", () => {
  it("reads within the TTL, rewrites after it, and keeps a 1-hour prefix for an hour", () => {
    const sim = new CacheSim(sonnet);
    const t0 = REPLAY_EPOCH_MS;
    expect(sim.call([b("a", 3000, "5m")], 0, t0).write_tokens).toBe(3000);
    expect(sim.call([b("a", 3000, "5m")], 0, t0 + 299_000).read_tokens).toBe(3000);
    // the read refreshed it: 4 more minutes are still inside the TTL
    expect(sim.call([b("a", 3000, "5m")], 0, t0 + 539_000).read_tokens).toBe(3000);
    const lapsed = sim.call([b("a", 3000, "5m")], 0, t0 + 539_000 + 301_000);
    expect(lapsed).toMatchObject({ read_tokens: 0, write_tokens: 3000 });

    const hour = new CacheSim(sonnet);
    const first = hour.call([b("h", 2000, "1h"), b("x", 1000, "5m")], 0, t0);
    // 1-hour blocks are written at the 1-hour rate
    expect(first.usd).toBeCloseTo((2000 * 6 + 1000 * 3.75) / 1e6, 12);
    expect(hour.call([b("h", 2000, "1h"), b("x", 1000, "5m")], 0, t0 + 20 * 60_000)).toMatchObject({
      read_tokens: 2000,
      write_tokens: 1000,
    });
  });

  it("never lapses without a time (sessions with no timeline)", () => {
    const sim = new CacheSim(sonnet);
    sim.call([b("a", 3000, "5m")], 0);
    expect(sim.call([b("a", 3000, "5m")], 0).read_tokens).toBe(3000);
  });
});

describe("the gap model", () => {
  const session = { id: "s1", messages: [], calls: [1, 3, 5, 7, 9, 11, 13, 15] };

  it("parses BASE and BASE,LONG@P and refuses anything else", () => {
    expect(parseGapModel("20")).toEqual({
      base_seconds: 20,
      long_seconds: 20,
      long_probability: 0,
    });
    expect(parseGapModel("20,900@0.1")).toEqual({
      base_seconds: 20,
      long_seconds: 900,
      long_probability: 0.1,
    });
    for (const bad of ["", "x", "20,900", "20,900@2", "-5"])
      expect(() => parseGapModel(bad), bad).toThrow(/--gap/);
  });

  it("times every call reproducibly, and prefers a session's own timestamps", () => {
    expect(callTimes(session)).toBeNull();
    const even = callTimes(session, parseGapModel("30"))!;
    expect(even.map((t) => (t - REPLAY_EPOCH_MS) / 1000)).toEqual([
      0, 30, 60, 90, 120, 150, 180, 210,
    ]);
    const all = callTimes(session, parseGapModel("30,900@1"))!;
    expect(all[1]! - all[0]!).toBe(900_000);
    const some = callTimes(session, parseGapModel("30,900@0.5"))!;
    expect(callTimes(session, parseGapModel("30,900@0.5"))).toEqual(some);
    const own = { ...session, times: session.calls.map((_, i) => i * 7) };
    expect(callTimes(own, parseGapModel("30"))).toBe(own.times);
  });

  it("draws each call's gap on its own: one in ten long, not runs of them", () => {
    const model = parseGapModel("20,900@0.1");
    for (const id of ["claude-code-1m", "codex", "s1"]) {
      const long = Array.from({ length: 2_000 }, (_, i) => gapSeconds(model, id, i + 1) === 900);
      const share = long.filter(Boolean).length / long.length;
      expect(share, id).toBeGreaterThan(0.07);
      expect(share, id).toBeLessThan(0.13);
      // Two long gaps in a row: ~1% of calls when independent (a run-prone draw gave ~9%).
      const pairs = long.filter((l, i) => l && long[i + 1]).length;
      expect(pairs / long.length, id).toBeLessThan(0.03);
    }
  });

  it("reads a request log's timestamps (ISO, epoch seconds or ms)", () => {
    expect(timestampOf("2026-01-01T00:00:10Z")).toBe(Date.UTC(2026, 0, 1, 0, 0, 10));
    expect(timestampOf(1_767_225_600)).toBe(1_767_225_600_000);
    expect(timestampOf(1_767_225_600_000)).toBe(1_767_225_600_000);
    expect(timestampOf("soon")).toBeNull();
    const m = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "more" },
    ];
    const log = [
      { model: "x", timestamp: "2026-01-01T00:00:00Z", messages: m.slice(0, 1) },
      { model: "x", timestamp: "2026-01-01T00:20:00Z", messages: m },
      { model: "x", messages: [{ role: "user", content: "other" }] },
    ]
      .map((r) => JSON.stringify(r))
      .join("\n");
    const [timed, untimed] = parseSessions(log, "log");
    expect(timed!.times).toEqual([Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1, 0, 20)]);
    expect(untimed!.times).toBeUndefined();
  });
});
