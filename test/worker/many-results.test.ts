// A session that must always be able to commit: a request of 100,000 tool results (about 9 MB) goes through
// the Worker turn after turn with nothing to report, whatever the size of what its turn must remember.
// Small results are derived each turn (no record at all); when every result is recorded (a size floor of 0),
// the records travel in batches under the RPC budget both ways (committed in runs, loaded in runs).
import { describe, expect, it } from "vitest";
import { call, compactPath, ON, sid, summary } from "./helpers.ts";

const RESULTS = 100_000;

/** One user message of `n` parallel results, each ~40 chars, after one assistant message of the calls. */
function manyResults(n: number, answered: boolean): string {
  const calls = [];
  const results = [];
  for (let i = 0; i < n; i++) {
    const id = `toolu_${i.toString(36).padStart(6, "0")}`;
    calls.push({ type: "tool_use", id, name: "probe", input: {} });
    results.push({
      type: "tool_result",
      tool_use_id: id,
      content: `probe ${i} answered ok, code 200`,
    });
  }
  const messages: unknown[] = [
    { role: "user", content: "Probe everything." },
    { role: "assistant", content: calls },
    { role: "user", content: results },
  ];
  if (answered)
    messages.push(
      { role: "assistant", content: [{ type: "text", text: "All probes answered." }] },
      { role: "user", content: "Thanks." },
    );
  return JSON.stringify({ model: "claude-opus-4-5", max_tokens: 100, messages });
}

describe(`a request of ${RESULTS.toLocaleString("en")} tool results`, () => {
  it("commits every turn: small results need no record", async () => {
    const session = sid("many-small");
    const body = manyResults(RESULTS, true);
    expect(body.length).toBeGreaterThan(8_000_000);
    for (let turn = 0; turn < 2; turn++) {
      const res = await call(compactPath(session), { body, config: ON });
      expect(res.status).toBe(200);
      const s = summary(res);
      expect(s.errors_total).toBe(0);
      expect(s).toMatchObject({ results: RESULTS, kept: RESULTS, changed: false });
      expect(await res.text()).toBe(body);
    }
  }, 60_000);

  it("commits every turn when every result is recorded: batches both ways", async () => {
    const session = sid("many-recorded");
    const body = manyResults(RESULTS, true);
    // Size floor 0: every result is medium, so each gets a sticky (kept) record.
    const config = { ...ON, tool_result_compaction_size_chars: 0 };
    const first = await call(compactPath(session), { body, config });
    expect(first.status).toBe(200);
    expect(summary(first)).toMatchObject({ errors_total: 0, new_decisions: RESULTS - 1 });
    await first.text();
    const second = await call(compactPath(session), { body, config });
    // Every record came back (in runs under the budget): nothing decided again.
    expect(summary(second)).toMatchObject({ errors_total: 0, new_decisions: 0 });
    expect(await second.text()).toBe(body);
  }, 60_000);
});
