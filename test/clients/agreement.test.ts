/**
 * The agreement path end to end, small: the first seven calls of a corpus session (a 98 KB CSV offloaded once
 * settled, then quoted, so the model recalls it) through the real proxy in workerd to the billing fake,
 * streamed, with offload off and on. The full figures come from `npm run bench -- agreement`; this keeps the
 * path from breaking silently: the bytes the proxy sends must be the ones the replay simulated, the client's
 * usage must be what the fake billed, and the bill must stay near the prediction.
 */
import { describe, expect, it } from "vitest";
import { parseSessions } from "../../src/replay/sessions.ts";
import { LEDGERS, runAgreement } from "../support/agreement/run.ts";
import { readSessions, SAMPLE } from "../support/corpus.ts";

function session() {
  const line = readSessions(SAMPLE).find((s) => s.id === "dev-22-mime-audit-csv4")!;
  const s = parseSessions(JSON.stringify(line), "sample")[0]!;
  // Calls 1…13: the CSV arrives at message 8, is offloaded at call 11 and quoted at call 13.
  return { ...s, messages: s.messages.slice(0, 14), calls: s.calls.filter((n) => n < 14) };
}

describe("agreement: corpus turns through the proxy to the billing fake", () => {
  it("sends what the replay simulated, bills it, and reports the client the usage it billed", async () => {
    const rows = await runAgreement({
      files: [{ name: "sample", sessions: [session()] }],
      policies: ["none", "edge-offload"],
      clients: ["cached"],
      model: "claude-sonnet-4-6",
      gapSeconds: 30,
      stream: true,
    });
    const [off, on] = rows as [(typeof rows)[0], (typeof rows)[0]];
    expect(on.hops).toBe(1); // the quote at call 13 needed the offloaded CSV back
    expect(on.replay.hops).toBe(1);
    for (const r of rows) {
      expect(r.client_calls).toBe(7);
      expect(r.lost).toBe(0);
      expect(r.usage_mismatches).toBe(0);
      // The replay's own arithmetic on the bytes the fake received is its prediction, to the cent's millionth.
      expect(r.sent.usd).toBeCloseTo(r.replay.usd, 6);
      // The replay's cache model and the API's rules with the same token counts stay close on these turns.
      for (const name of Object.keys(LEDGERS))
        expect(Math.abs(r.ledgers[name]!.usd / r.sent.usd - 1)).toBeLessThan(0.05);
      // The fake's tokenizer is not the estimate: the bill may differ, not by a factor.
      expect(r.fake.usd / r.replay.usd).toBeGreaterThan(0.5);
      expect(r.fake.usd / r.replay.usd).toBeLessThan(1.5);
    }
    expect(off.claimed_saved_usd).toBe(0);
    expect(on.claimed_saved_usd).toBeGreaterThan(0);
    expect(on.fake.usd).toBeLessThan(off.fake.usd);
  }, 120_000);
});
