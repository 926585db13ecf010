/**
 * A loss shown as a loss: one session that offloading makes dearer on the billing fake's bill (Anthropic's
 * documented cache rules on the bytes it receives, test/support/billing-fake.ts, written apart from the code
 * under test), driven through the proxy loop in process, with offload off and on. A config that promises the
 * stub a thousand calls stubs a mid-sized result on arrival; declaring the recall tool rewrites the long cached
 * system prompt, the model reads the result back at once and the session ends. The session's report must
 * show the loss (a billed saving below 0), and the tenant page's `billed.dearer` must count it, with a worst
 * share near the bill's.
 */
import { describe, expect, it } from "vitest";
import { pageTotals, sessionReport, sessionRow } from "../../src/report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { BillingFake, callTool, say } from "../support/billing-fake.ts";
import { cachedRequest, proxyAnthropicCall } from "../support/proxy-call.ts";
import { ON, type Turn } from "../support/requests.ts";

type Req = Record<string, any>;
const MODEL = "claude-sonnet-4-6";
const REF = { tenant: "acme", session: "dearer" };

/** The request of a caching client: its breakpoint on the last block, after a long system prompt. */
const cached = (turns: Turn[]): Req => cachedRequest(turns, MODEL);

/** A plain-text tool output of about `chars` characters (log lines). */
function logText(chars: number): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < chars; i++) {
    const line = `line ${i}: test_case_${i} passed in ${(i * 7) % 100} ms`;
    lines.push(line);
    n += line.length + 1;
  }
  return lines.join("\n");
}

async function session(offload: boolean): Promise<{ fake: BillingFake; store: MemoryStore }> {
  const fake = new BillingFake();
  const store = new MemoryStore();
  // The model reads a stub back at once (one recall), and otherwise runs its next step.
  fake.script = (call) => {
    const text = JSON.stringify(call.json);
    const stub = /trm_[0-9a-f]{24}/.exec(text);
    if (stub !== null && !text.includes("toolu_fake_recall"))
      return callTool(
        "recall_tool_result",
        { mem_id: stub[0], query: "line 1:" },
        "toolu_fake_recall",
      );
    return say("done");
  };
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) =>
    fake.fetch(new Request(input, init))) as typeof fetch;
  const steps: Turn[] = Array.from({ length: 3 }, (_, i) => ({ id: `s${i}`, result: `step ${i}` }));
  const mid: Turn = { id: "mid", result: logText(12_000) };
  // Three small steps, then the mid-sized result arrives and the session ends after that call.
  const calls = [...steps.map((_, i) => steps.slice(0, i + 1)), [...steps, mid]];
  for (const c of calls) {
    const text = JSON.stringify(cached(c));
    const status = await proxyAnthropicCall({
      fetch: fetcher,
      text,
      ref: REF,
      store,
      config: offload
        ? {
            ...ON,
            // A promise the session breaks: a thousand more calls, no learning from its lengths.
            tool_result_offload_horizon_default: 1000,
            tool_result_offload_horizon_learned: false,
          }
        : {},
    });
    expect(status).toBe(200);
    fake.clock.advance(20);
  }
  return { fake, store };
}

describe("a session offloading made dearer, on the billing fake's bill", () => {
  it("is reported as a loss and counted in the page's billed.dearer", async () => {
    const off = await session(false);
    const on = await session(true);
    // The fake's own bill: the stub landed, the tool was declared, one recall hop, and the session cost more.
    expect(on.fake.calls.length).toBe(off.fake.calls.length + 1);
    const offUsd = off.fake.total().usd;
    const loss = on.fake.total().usd - offUsd;
    expect(loss).toBeGreaterThan(0.01 * offUsd);

    const report = await sessionReport({ store: on.store, session: REF });
    expect(report.totals.billed.turns_measured).toBe(4);
    expect(report.totals.billed.saved_usd).toBeLessThan(0);
    // The claimed loss is the bill's, within the agreement bench's 5%.
    expect(Math.abs(-report.totals.billed.saved_usd - loss)).toBeLessThanOrEqual(0.05 * loss);

    const data = await on.store.sessionReport(REF);
    const totals = pageTotals([sessionRow(data!)]);
    expect(totals.billed.dearer.sessions).toBe(1);
    expect(totals.billed.dearer.of).toBe(1);
    expect(totals.billed.dearer.worst_share).toBeCloseTo(loss / offUsd, 2);
  });
});
