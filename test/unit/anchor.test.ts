/**
 * The advancing cache anchor (tool_result_medium_tier "cache_anchor", the default, Anthropic): where it goes
 * (these tests lift its risk bound), and the risk bound itself (the default: its write's premium within 2%
 * of what the session has spent).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import { BlockCache } from "../../src/replay/blocks.ts";
import { CacheSim } from "../../src/replay/cache.ts";
import type { Request } from "../../src/replay/types.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON, textBody } from "../support/requests.ts";

type Req = Record<string, any>;
const ANCHOR = {
  ...ON,
  tool_result_medium_tier: "cache_anchor",
  tool_result_anchor_risk_share: null,
} as const;
/** Long enough to cache on every model (4,096 tokens is the largest minimum in the table). */
const turns = (n: number, size = 6000) =>
  Array.from({ length: n }, (_, i) => ({ id: `t${i}`, result: textBody(size, `r${i}`) }));
const markers = (text: string) => (text.match(/"cache_control"/g) ?? []).length;
const STRIP = /,"cache_control":\{"type":"ephemeral"(,"ttl":"1h")?\}/g;

async function run(
  request: Record<string, unknown>,
  config: Record<string, unknown> = ANCHOR,
  store = new MemoryStore(),
  session = "s",
) {
  const out = await compact({ request: JSON.stringify(request), session, store, config });
  return { out, text: out.request as string, req: JSON.parse(out.request as string) as Req };
}

describe("cache anchor", () => {
  it("places one breakpoint at the end of the prompt of a client that sets none", async () => {
    const { out, text, req } = await run(conversation(turns(6)));
    expect(out.report.anchor).toMatchObject({ placed: true, ttl: "5m" });
    expect(markers(text)).toBe(1);
    const last = req.messages.at(-1).content.at(-1);
    expect(last.cache_control).toEqual({ type: "ephemeral" });
  });

  it("does nothing when off", async () => {
    const { out, text } = await run(conversation(turns(6)), {
      ...ON,
      tool_result_medium_tier: "off",
    });
    expect(out.report.anchor).toBeNull();
    expect(markers(text)).toBe(0);
  });

  it("moves with the conversation while the previous prefix stays byte for byte the same", async () => {
    const store = new MemoryStore();
    const a = await run(conversation(turns(6)), ANCHOR, store);
    const b = await run(conversation(turns(7)), ANCHOR, store);
    const prevBody = a.text.replace(STRIP, "");
    const nextBody = b.text.replace(STRIP, "");
    // the previous turn's messages, anchor left out, are a prefix of the next turn's
    const cut = (s: string) => s.slice(0, s.lastIndexOf("]}"));
    expect(nextBody.startsWith(cut(prevBody))).toBe(true);
    expect(markers(b.text)).toBe(1);
    expect(b.req.messages.at(-1).content.at(-1).cache_control).toEqual({ type: "ephemeral" });
  });

  it("keeps the stubs sticky under a moving anchor: the cached prefix up to the last anchor is a hit", async () => {
    const store = new MemoryStore();
    const big = [{ id: "big", result: jsonBody(90_000) }, ...turns(5)];
    const a = await run(conversation(big), ANCHOR, store);
    expect(a.out.decisions[0]!.action).toBe("offloaded");
    const b = await run(conversation([...big, { id: "n", result: "new" }]), ANCHOR, store);
    const upToAnchor = a.text.slice(0, a.text.indexOf(',"cache_control"'));
    expect(b.text.replace(STRIP, "").startsWith(upToAnchor)).toBe(true);
  });

  it("leaves a client that already advances a breakpoint, or uses automatic caching, alone", async () => {
    const advancing = conversation(turns(6));
    (advancing.messages as Req[]).at(-1)!.content[0].cache_control = { type: "ephemeral" };
    const r1 = await run(advancing);
    expect(r1.out.report.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("already advances"),
    });
    expect(markers(r1.text)).toBe(1);
    const auto = conversation(turns(6), { extra: { cache_control: { type: "ephemeral" } } });
    const r2 = await run(auto);
    expect(r2.out.report.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("automatic"),
    });
    expect(markers(r2.text)).toBe(1);
  });

  it("keeps the client's own breakpoints and TTLs and never exceeds 4 in all", async () => {
    const sys = [{ type: "text", text: "system", cache_control: { type: "ephemeral", ttl: "1h" } }];
    const tools = [
      {
        name: "bash",
        description: "d",
        input_schema: { type: "object" },
        cache_control: { type: "ephemeral", ttl: "1h" },
      },
    ];
    const r = await run(conversation(turns(6), { system: sys, tools }));
    expect(r.req.system).toEqual(sys);
    expect(r.req.tools[0].cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(markers(r.text)).toBe(3);
    // four already: nothing added
    const req = conversation(turns(6), { system: sys, tools });
    const msgs = req.messages as Req[];
    msgs[2]!.content[0].cache_control = { type: "ephemeral" };
    msgs[4]!.content[0].cache_control = { type: "ephemeral" };
    const full = await run(req);
    expect(full.out.report.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("4 breakpoints"),
    });
    expect(markers(full.text)).toBe(4);
  });

  it("adds nothing below the model's minimum cacheable length, or for an unknown model", async () => {
    const small = await run(
      conversation([
        { id: "a", result: "x" },
        { id: "b", result: "y" },
      ]),
    );
    expect(small.out.report.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("minimum cacheable"),
    });
    expect(small.out.changed).toBe(false);
    const unknown = await run(conversation(turns(6), { model: "mystery-model" }));
    expect(unknown.out.report.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("unknown model"),
    });
    // Sonnet caches from 1,024 tokens, Opus 4.5 from 4,096: a ~2,500-token prompt caches on one only
    const mid = conversation(turns(1, 7000));
    expect((await run({ ...mid, model: "claude-sonnet-4-6" })).out.report.anchor?.placed).toBe(
      true,
    );
    expect((await run({ ...mid, model: "claude-opus-4-5" })).out.report.anchor?.placed).toBe(false);
  });

  it("stops short of a fresh large result that may still be offloaded once settled", async () => {
    const t = [...turns(5), { id: "fresh", result: jsonBody(90_000) }];
    // (sent in full on arrival: first delivery would stub it now, and its stub is final)
    const { req, out } = await run(conversation(t), {
      ...ANCHOR,
      tool_result_first_delivery: "full",
    });
    expect(out.report.anchor?.placed).toBe(true);
    const last = req.messages.at(-1).content[0];
    expect(last.tool_use_id).toBe("fresh");
    expect(last.cache_control).toBeUndefined();
    // the anchor sits on the assistant's tool_use block right before it
    expect(req.messages.at(-2).content.at(-1).cache_control).toEqual({ type: "ephemeral" });
  });

  it("rewrites a plain-string last message as one text block to carry the marker", async () => {
    const req = conversation(turns(6));
    (req.messages as Req[]).push(
      { role: "assistant", content: "ok" },
      { role: "user", content: "and now?" },
    );
    const { req: got } = await run(req);
    expect(got.messages.at(-1).content).toEqual([
      { type: "text", text: "and now?", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("chooses the TTL from the session's observed gap between turns, priced", async () => {
    let now = 0;
    const store = new MemoryStore({ now: () => now });
    const at = async (gapSeconds: number, session: string) => {
      now = 0;
      for (let i = 0; i < 3; i++) {
        await run(conversation(turns(6 + i)), ANCHOR, store, session);
        now += gapSeconds * 1000;
      }
      return (await run(conversation(turns(9)), ANCHOR, store, session)).out.report.anchor;
    };
    expect(await at(30, "fast")).toMatchObject({ placed: true, ttl: "5m" });
    expect(await at(20 * 60, "slow")).toMatchObject({ placed: true, ttl: "1h" });
    expect(await at(3 * 3600, "idle")).toMatchObject({
      placed: false,
      reason: expect.stringContaining("gap"),
    });
  });

  it("never puts a 1-hour anchor after a 5-minute client breakpoint (the API orders TTLs)", async () => {
    let now = 0;
    const store = new MemoryStore({ now: () => now });
    const sys = [{ type: "text", text: "system", cache_control: { type: "ephemeral" } }];
    for (let i = 0; i < 3; i++) {
      await run(conversation(turns(6 + i), { system: sys }), ANCHOR, store, "o");
      now += 20 * 60 * 1000;
    }
    const r = await run(conversation(turns(9), { system: sys }), ANCHOR, store, "o");
    expect(r.out.report.anchor?.ttl).not.toBe("1h");
  });
});

describe("the anchor's risk bound (the default)", () => {
  /** A session of `n` calls: results of the given sizes (under the size floor: only the anchor acts). */
  const session = (sizes: readonly number[], n: number) =>
    conversation(
      sizes.slice(0, n).map((size, i) => ({ id: `t${i}`, result: textBody(size, `r${i}`) })),
    );

  /** The calls of a session one by one, as a client that sets no breakpoint sends them. */
  async function calls(sizes: readonly number[], config: Record<string, unknown> = ON) {
    const store = new MemoryStore();
    const out = [];
    for (let n = 1; n <= sizes.length; n++) {
      const raw = session(sizes, n);
      const r = await run(raw, config, store, "bound");
      out.push({ raw, sent: r.req, anchor: r.out.report.anchor });
    }
    return out;
  }

  it("waits until its write's premium is within the share of what the session has spent, then advances every call", async () => {
    const got = await calls(Array.from({ length: 40 }, () => 6000));
    const first = got.findIndex((c) => c.anchor?.placed === true);
    expect(first).toBeGreaterThan(3);
    expect(got[first - 1]!.anchor).toMatchObject({
      placed: false,
      reason: expect.stringContaining("of what the session has spent so far"),
    });
    // once the session has spent enough, every later call carries it
    for (const c of got.slice(first)) expect(c.anchor?.placed).toBe(true);
    // without the bound it goes from the first call where the prompt is long enough to cache
    const eager = await calls(
      Array.from({ length: 6 }, () => 6000),
      ANCHOR,
    );
    const eagerFirst = eager.findIndex((c) => c.anchor?.placed === true);
    expect(eagerFirst).toBeGreaterThanOrEqual(0);
    expect(eagerFirst).toBeLessThan(first);
  });

  /**
   * Each session of `sizes`, as a client that sets no breakpoint sends it, priced by the cache simulation
   * with what we sent and with what the client sent: the session could end after any call, so each prefix
   * of it must stay within the bound.
   */
  const withinBound = (sizes: fc.Arbitrary<number[]>, numRuns: number) =>
    fc.assert(
      fc.asyncProperty(sizes, async (s) => {
        const price = resolveModel("claude-sonnet-4-6")!;
        const [on, off] = [new CacheSim(price), new CacheSim(price)];
        const blocks = new BlockCache();
        let [sent, raw] = [0, 0];
        for (const c of await calls(s)) {
          sent += on.call(blocks.blocksOf(c.sent as Request), 0).usd;
          raw += off.call(blocks.blocksOf(c.raw as Request), 0).usd;
          expect(sent).toBeLessThanOrEqual(raw * 1.02 + 1e-12);
        }
      }),
      { numRuns },
    );

  it("makes no session dearer than the bound, wherever it ends, priced by the cache simulation", () =>
    withinBound(
      fc.array(fc.integer({ min: 200, max: 7900 }), { minLength: 1, maxLength: 45 }),
      25,
    ));

  it("counts what this call's stubs save: goes in on the call a large result is stubbed, and still no session is dearer than the bound", async () => {
    // a short session whose fourth call stubs a large result on arrival: the bound alone waits (the
    // third call), the stub's saving lets it go in (prompts as sent: over Opus 4.5's 4,096-token minimum)
    const got = await calls([7000, 7000, 7000, 120_000, 6000]);
    expect(got[2]!.anchor?.reason).toContain("of what the session has spent so far");
    expect(got[3]!.anchor, JSON.stringify(got.map((c) => c.anchor))).toMatchObject({
      placed: true,
    });
    const size = fc.oneof(
      { arbitrary: fc.integer({ min: 200, max: 7900 }), weight: 4 },
      { arbitrary: fc.integer({ min: 20_000, max: 150_000 }), weight: 1 },
    );
    await withinBound(fc.array(size, { minLength: 1, maxLength: 30 }), 20);
  });
});
