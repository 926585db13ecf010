/**
 * The reports' billed figures. Nothing changed ⇒ a billed saving of exactly 0, in every format, whatever
 * usage the provider reports (a property); a stub's saving agrees with an independent provider's bills (the
 * billing fake, in process: the real client requests, with offload off and on); a turn without usage is
 * counted, flagged and modelled rather than dropped; a line logged before sketches is still billed; a shadow
 * turn saves nothing.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NO_USAGE, type TurnUsage, type UsageTokens, usageUsd } from "../../src/core/billing.ts";
import { type CompactInput, compact } from "../../src/core/compact.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import type { SessionRef } from "../../src/core/types.ts";
import { billedSession } from "../../src/store/billing-report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { BillingFake } from "../support/billing-fake.ts";
import {
  type ConversationOptions,
  KITS,
  type Kit,
  type Req,
  type Step,
} from "../support/formats.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const SMALL = (i: number) => `line ${i}: ${"ok ".repeat(300)}`;
const LARGE = JSON.stringify({
  items: Array.from({ length: 2500 }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
});

function usageOf(model: string, first: UsageTokens): TurnUsage {
  return {
    source: "client",
    model,
    calls: 1,
    tokens: first,
    first,
    answer_output: first.output,
  };
}

async function reportTurns(store: MemoryStore, ref: SessionRef) {
  return (await store.sessionReport(ref, { turns: true }))!.turns;
}

const tokens = fc.record({
  input: fc.nat({ max: 200_000 }),
  cache_read: fc.nat({ max: 200_000 }),
  cache_write_5m: fc.nat({ max: 200_000 }),
  cache_write_1h: fc.nat({ max: 50_000 }),
  output: fc.nat({ max: 5000 }),
});

describe.each(KITS)("nothing changed ⇒ a billed saving of exactly 0 ($format)", (kit: Kit) => {
  it("whatever the provider reports as cached, turn after turn", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(tokens, { minLength: 1, maxLength: 5 }), async (usages) => {
        const store = new MemoryStore();
        const ref = { tenant: "t", session: `same-${kit.format}` };
        let req = kit.conversation([{ id: "c0", result: SMALL(0) }]);
        for (const [i, u] of usages.entries()) {
          const out = await compact({
            format: kit.format,
            request: req,
            session: ref,
            config: ON,
            store,
          } as CompactInput<Req>);
          expect(out.changed).toBe(false);
          await store.recordUsage(ref, { turn: out.report.turn }, usageOf(kit.model, u));
          req = kit.addTurn(req, { id: `c${i + 1}`, result: SMALL(i + 1) });
        }
        const billed = billedSession(await reportTurns(store, ref));
        expect(billed.totals.saved_usd).toBe(0);
        expect(billed.totals.counterfactual_usd).toBe(billed.totals.usd);
        for (const t of billed.turns) expect(t?.basis).toBe("untouched");
        expect(billed.estimated?.every((x) => x === 0)).toBe(true);
      }),
      { numRuns: 12 },
    );
  });
});

/** How the client sends its conversation: its own bytes (a breakpoint it places), and on which store. */
interface Client {
  send: (req: Req) => Req;
  options?: ConversationOptions;
  /** The tenant's store (its earlier sessions' calibration), and the session's id in it. */
  store?: MemoryStore;
  session?: string;
}

/**
 * A client's conversation driven through `compact` (the compact route's work, in process) and billed by the
 * fake; `postUsage(turn)` false: that turn's usage is never posted.
 */
async function drive(
  kit: Kit,
  model: string,
  config: Record<string, unknown>,
  steps: Step[],
  postUsage: (turn: number) => boolean = () => true,
  client: Client = { send: (req) => req },
): Promise<{ bill: number; billed: ReturnType<typeof billedSession> }> {
  const fake = new BillingFake();
  const store = client.store ?? new MemoryStore();
  const ref = { tenant: "t", session: client.session ?? `drive-${kit.format}` };
  const path =
    kit.format === "anthropic"
      ? "/v1/messages"
      : kit.format === "openai-chat"
        ? "/v1/chat/completions"
        : "/v1/responses";
  let req = kit.conversation(steps.slice(0, 1), { model, ...client.options });
  for (let i = 1; i <= steps.length; i++) {
    fake.clock.advance(30);
    const out = await compact({
      format: kit.format,
      request: JSON.stringify(client.send(req)),
      session: ref,
      config,
      store,
    } as CompactInput<string>);
    const res = await fake.fetch(
      new Request(`http://fake${path}`, { method: "POST", body: out.request }),
    );
    const usage = ((await res.json()) as { usage: unknown }).usage as Record<string, number>;
    const c = fake.calls.at(-1)!;
    if (config.tool_result_compaction_enabled === true && postUsage(i))
      await store.recordUsage(ref, { turn: out.report.turn }, usageOf(model, c.tokens));
    expect(usage).toBeDefined();
    if (i < steps.length) req = kit.addTurn(req, steps[i]!);
  }
  const turns = config.tool_result_compaction_enabled === true ? await reportTurns(store, ref) : [];
  return { bill: fake.total().usd, billed: billedSession(turns) };
}

const FORMATS: [Kit, string][] = [
  [KITS.find((k) => k.format === "anthropic")!, "claude-sonnet-4-6"],
  [KITS.find((k) => k.format === "openai-chat")!, "gpt-5.4"],
  [KITS.find((k) => k.format === "openai-responses")!, "gpt-5.4"],
];
// A large result early, then a dozen small calls: offloaded once settled, and carried as a stub after.
const STEPS: Step[] = [
  { id: "big", result: LARGE },
  ...Array.from({ length: 12 }, (_, i) => ({ id: `s${i}`, result: SMALL(i) })),
];

// First delivery off: the large result goes out in full once, so the provider measures it.
const MEASURED = { ...ON, tool_result_first_delivery: "full" };

describe.each(FORMATS)("the billed saving against an independent bill (%s)", (kit, model) => {
  it("matches bill off − bill on within 5%, on an append-only client", async () => {
    const off = await drive(kit, model, { tool_result_compaction_enabled: false }, STEPS);
    const on = await drive(kit, model, MEASURED, STEPS);
    const truth = off.bill - on.bill;
    expect(truth).toBeGreaterThan(0.01 * off.bill);
    expect(on.billed.totals.saved_usd).toBeGreaterThan(0);
    expect(Math.abs(on.billed.totals.saved_usd - truth)).toBeLessThan(0.05 * truth);
    expect(on.billed.totals.usd).toBeCloseTo(on.bill, 9);
    expect(on.billed.totals.complete).toBe(true);
  });

  it("a turn without usage is flagged and modelled, its cost kept", async () => {
    const off = await drive(kit, model, { tool_result_compaction_enabled: false }, STEPS);
    // The stub lands on the second call (the large result settles): its usage is never posted.
    const on = await drive(kit, model, MEASURED, STEPS, (turn) => turn !== 2);
    const truth = off.bill - on.bill;
    const t = on.billed.totals;
    expect(t.complete).toBe(false);
    expect(t.turns_unmeasured).toBe(1);
    // The landing turn's modelled saving counts: the total still agrees with the bills.
    expect(t.unmeasured_saved_usd).not.toBe(0);
    expect(t.turns_measured).toBe(STEPS.length - 1);
    expect(Math.abs(t.saved_usd - truth)).toBeLessThan(0.05 * truth);
  });

  it("a result stubbed on the call it arrives (the default) is never measured: its estimate, never inflated, and said so", async () => {
    const off = await drive(kit, model, { tool_result_compaction_enabled: false }, STEPS);
    const on = await drive(kit, model, ON, STEPS);
    const truth = off.bill - on.bill;
    const t = on.billed.totals;
    expect(t.removed.results).toBeGreaterThan(0);
    expect(t.removed.measured).toBe(0);
    // The fake's tokenizer is no provider's and not ours: the estimate may miss by some percent, but
    // a ratio learned on other text (the session's prose) never scales an unseen kind up.
    expect(t.saved_usd).toBeLessThan(1.02 * truth);
    expect(t.saved_usd).toBeGreaterThan(0.8 * truth);
    expect(t.usd).toBeCloseTo(on.bill, 9);
  });
});

describe("lines the counterfactual cannot model", () => {
  const line = (estimate: object, usage: TurnUsage, shadow = false) => ({
    turn: 1,
    results: 1,
    kept: 0,
    compacted: 0,
    offloaded: 1,
    new_decisions: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_usd: 0,
    errors: 0,
    shadow,
    gate_fired: 0,
    gate_declined: 0,
    at: 0,
    estimate: {
      sent: { request: 1000 },
      removed: { json: 9000 },
      cached_share: 1,
      ttl: "5m" as const,
      calibrated: false,
      model: "claude-sonnet-4-6",
      ...estimate,
    },
    usage,
  });
  const u = usageOf("claude-sonnet-4-6", { ...NO_USAGE, cache_read: 1000, output: 10 });
  const price = resolveModel("claude-sonnet-4-6")!;

  it("a line logged before sketches: the tokens taken out at their position's rate", () => {
    const billed = billedSession([line({}, u)]);
    expect(billed.turns[0]!.basis).toBe("estimated");
    expect(billed.turns[0]!.saved_usd).toBeCloseTo((9000 * 0.3) / 1e6, 12);
  });

  it("a shadow turn saves nothing: what went out is what the client sent", () => {
    const billed = billedSession([line({}, u, true)]);
    expect(billed.turns[0]).toMatchObject({ saved_usd: 0, basis: "untouched" });
    expect(billed.turns[0]!.counterfactual_usd).toBeCloseTo(usageUsd(price, u.tokens), 12);
  });

  it("an unreadable sketch is a line without one", () => {
    const billed = billedSession([line({ sketch: "s1;not,a,sketch" }, u)]);
    expect(billed.turns[0]!.basis).toBe("estimated");
  });
});

/** Anthropic's common caching client: its breakpoint on the last block of each request. */
const lastBlock: Client = {
  options: { extra: { system: "You are a careful agent. ".repeat(300) } },
  send: (req) => {
    const out = structuredClone(req);
    const last = out.messages.at(-1);
    if (typeof last.content === "string") last.content = [{ type: "text", text: last.content }];
    last.content[last.content.length - 1] = {
      ...last.content.at(-1),
      cache_control: { type: "ephemeral" },
    };
    return out;
  },
};

/** Each switch, and whether the large result goes out in full once (so its tokens are measured). */
const SWITCHES: [string, Record<string, unknown>, boolean][] = [
  ["the defaults", ON, false],
  [
    "the breakpoint move alone (first delivery full)",
    { ...ON, tool_result_first_delivery: "full" },
    true,
  ],
  ["first delivery alone (no move)", { ...ON, tool_result_breakpoint_move: false }, false],
  [
    "neither",
    { ...ON, tool_result_first_delivery: "full", tool_result_breakpoint_move: false },
    true,
  ],
  ["the cache anchor", { ...ON, tool_result_medium_tier: "cache_anchor" }, false],
];

describe.each(SWITCHES)(
  "a caching client's billed saving against the bill: %s",
  (_, config, sent) => {
    const kit = KITS.find((k) => k.format === "anthropic")!;
    it(
      sent ? "matches bill off − bill on within 5%" : "is the estimate, never inflated",
      async () => {
        const model = "claude-sonnet-4-6";
        const off = await drive(
          kit,
          model,
          { tool_result_compaction_enabled: false },
          STEPS,
          undefined,
          lastBlock,
        );
        const on = await drive(kit, model, config, STEPS, undefined, lastBlock);
        const truth = off.bill - on.bill;
        const claimed = on.billed.totals.saved_usd;
        expect(truth).toBeGreaterThan(0.01 * off.bill);
        if (sent) expect(Math.abs(claimed - truth)).toBeLessThan(0.05 * truth);
        else {
          // Stubbed on arrival: never sent, never measured (see the append-only case above).
          expect(claimed).toBeLessThan(1.02 * truth);
          expect(claimed).toBeGreaterThan(0.8 * truth);
        }
        expect(on.billed.totals.usd).toBeCloseTo(on.bill, 9);
      },
    );
  },
);
