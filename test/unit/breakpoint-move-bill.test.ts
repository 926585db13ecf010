/**
 * The breakpoint move on a bill: the same conversation through the proxy loop (in process) to the billing
 * fake, which applies Anthropic's documented cache rules to the bytes it receives (test/support/billing-fake.ts,
 * written apart from the code under test), with the move on (the default) and off. The move must show in the
 * request bytes the proxy sends: the arrival call writes no cache for the large result, and the session's
 * bill is lower by about a quarter of the result's input price.
 */
import { describe, expect, it } from "vitest";
import { resolveModel, usd } from "../../src/core/pricing.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { BillingFake, callTool } from "../support/billing-fake.ts";
import { proxyAnthropicCall } from "../support/proxy-call.ts";
import { conversation, jsonBody, ON, type Turn } from "../support/requests.ts";

type Req = Record<string, any>;
const EPH = { type: "ephemeral" };
const MODEL = "claude-sonnet-4-6";

/** The request a caching client sends: its breakpoint on the last block. */
function cached(turns: Turn[]): Req {
  const req = conversation(turns, {
    model: MODEL,
    system: "You are a careful agent. ".repeat(300),
  }) as Req;
  const last = req.messages.at(-1).content;
  last[last.length - 1] = { ...last[last.length - 1], cache_control: EPH };
  return req;
}

async function session(move: boolean): Promise<{ fake: BillingFake; sent: Req[] }> {
  const fake = new BillingFake();
  const store = new MemoryStore();
  const sent: Req[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    sent.push(JSON.parse(String(init?.body)) as Req);
    return fake.fetch(new Request(input, init));
  }) as typeof fetch;
  const turns: Turn[] = Array.from({ length: 4 }, (_, i) => ({ id: `s${i}`, result: `step ${i}` }));
  const big: Turn = { id: "big", result: jsonBody(150_000) };
  // The agent's calls: four small steps, the large result arrives, then two more steps.
  const calls = [
    ...turns.map((_, i) => turns.slice(0, i + 1)),
    [...turns, big],
    [...turns, big, { id: "n1", result: "next 1" }],
    [...turns, big, { id: "n1", result: "next 1" }, { id: "n2", result: "next 2" }],
  ];
  for (const c of calls) {
    fake.reply(callTool("bash", { cmd: "next" }));
    const status = await proxyAnthropicCall({
      fetch: fetcher,
      text: JSON.stringify(cached(c)),
      ref: { tenant: "acme", session: "bill" },
      store,
      config: { ...ON, tool_result_first_delivery: "full", tool_result_breakpoint_move: move },
    });
    expect(status).toBe(200);
    fake.clock.advance(20);
  }
  return { fake, sent };
}

describe("the breakpoint move on the billing fake's bill", () => {
  it("writes no cache for the arriving result, and the bill is lower by about its write surcharge", async () => {
    const on = await session(true);
    const off = await session(false);
    const arrival = 4;
    // The bytes sent: the arrival call's large result carries no marker with the move; the call before it does.
    const lastOn = on.sent[arrival]!.messages.at(-1).content[0];
    const lastOff = off.sent[arrival]!.messages.at(-1).content[0];
    expect(lastOn.tool_use_id).toBe("big");
    expect(lastOn.cache_control).toBeUndefined();
    expect(lastOff.cache_control).toEqual(EPH);
    expect(on.sent[arrival]!.messages.at(-2).content.at(-1).cache_control).toEqual(EPH);
    // The fake's own count: the arrival call writes ~40K tokens fewer and bills them at input instead.
    const a = on.fake.calls[arrival]!.tokens;
    const b = off.fake.calls[arrival]!.tokens;
    expect(b.cache_write_5m - a.cache_write_5m).toBeGreaterThan(30_000);
    expect(a.input - b.input).toBe(b.cache_write_5m - a.cache_write_5m);
    // Both stub the result on the next call (the move binds it; without, the gate fires there).
    for (const s of [on, off])
      expect(JSON.stringify(s.sent[arrival + 1]!.messages.at(-3).content[0].content)).toContain(
        "trm_",
      );
    const price = resolveModel(MODEL)!;
    const surcharge = usd(b.cache_write_5m - a.cache_write_5m, price.cache_write_5m - price.input);
    const saved = off.fake.total().usd - on.fake.total().usd;
    expect(saved).toBeGreaterThan(0.9 * surcharge);
    expect(saved).toBeLessThan(1.1 * surcharge);
  });
});
