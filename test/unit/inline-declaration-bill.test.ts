/**
 * The recall tool declared mid-conversation (src/core/turn/declare.ts), on the billing fake's bill
 * (Anthropic's documented cache rules on the bytes it receives, written apart from the code under test),
 * driven through the proxy loop in process. A caching client with a long system prompt; a large result
 * arrives and is stubbed on arrival, which declares the recall tool. In `tools`, that rewrites the cached
 * system prompt; in a system message after the stub, the prompt before it is read from the cache as before.
 * The report's claimed saving must be the bill's.
 */
import { describe, expect, it } from "vitest";
import { sessionReport } from "../../src/report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { BillingFake, callTool } from "../support/billing-fake.ts";
import { cachedRequest, proxyAnthropicCall } from "../support/proxy-call.ts";
import { jsonBody, ON, type Turn } from "../support/requests.ts";

type Req = Record<string, any>;
const MODEL = "claude-opus-5-5";

const cached = (turns: Turn[]): Req => cachedRequest(turns, MODEL);

async function session(config: Record<string, unknown>, name: string) {
  const fake = new BillingFake();
  const store = new MemoryStore();
  fake.script = () => callTool("bash", { cmd: "next" });
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) =>
    fake.fetch(new Request(input, init))) as typeof fetch;
  const steps: Turn[] = Array.from({ length: 12 }, (_, i) => ({
    id: `s${i}`,
    result: `step ${i}`,
  }));
  const big: Turn = { id: "big", result: jsonBody(80_000) };
  // Three small steps, the large result, then nine more steps that carry it (or its stub).
  const turns = [...steps.slice(0, 3), big, ...steps.slice(3)];
  for (let n = 1; n <= turns.length; n++) {
    const status = await proxyAnthropicCall({
      fetch: fetcher,
      text: JSON.stringify(cached(turns.slice(0, n))),
      ref: { tenant: "acme", session: name },
      store,
      config,
    });
    expect(status).toBe(200);
    fake.clock.advance(20);
  }
  return { fake, store, ref: { tenant: "acme", session: name } };
}

describe("the recall tool declared inline, on the billing fake's bill", () => {
  it("stubs where a declaration in `tools` would not pay, reads the cached prompt on, and the report claims the bill's saving", async () => {
    const off = await session({}, "off");
    const inline = await session(ON, "inline");
    const tools = await session({ ...ON, tool_result_recall_tool_inline: false }, "tools");
    const usd = (s: { fake: BillingFake }) => s.fake.total().usd;
    // Declared inline, the large result is stubbed on arrival and the session is cheaper; priced with the
    // rewrite of the cached system prompt that declaring it in `tools` costs, the gate declines it here.
    expect(usd(inline)).toBeLessThan(0.8 * usd(off));
    expect(usd(tools)).toBe(usd(off));
    const decisions = await tools.store.sessionReport(tools.ref);
    expect(JSON.stringify(decisions)).toContain("declaring the recall tool");
    // The declaring call (the fourth) reads the system prompt from the cache, as the call before it did.
    const read = inline.fake.calls[3]!.tokens.cache_read;
    expect(read).toBeGreaterThanOrEqual(inline.fake.calls[2]!.tokens.cache_read);
    expect(read).toBeGreaterThan(20_000);
    // What the report claims is what the bill shows (the agreement bench's 5%).
    const saving = usd(off) - usd(inline);
    const report = await sessionReport({ store: inline.store, session: inline.ref });
    expect(Math.abs(report.totals.billed.saved_usd - saving)).toBeLessThanOrEqual(0.05 * saving);
  });
});
