// Two turns of one session at once: the SessionDO serializes the commits, the first decision stands, and the
// loser re-renders from it, so both answers agree byte for byte on every result they share.
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { call, compactPath, conversation, nextTurn, ON, request, sid, summary } from "./helpers.ts";

type Out = { messages: { content: { content?: string }[] }[] };

/** An app whose turns' begins wait until `parties` turns have begun: every turn decides before any commits. */
function racingApp(parties: number) {
  let waiting = 0;
  let release!: () => void;
  const allLoaded = new Promise<void>((resolve) => (release = resolve));
  return createApp({
    log: () => {},
    store: (e, settings, log) => {
      const real = defaultParts(e, settings, log);
      const sessions = real.sessions;
      return new ComposedStore({
        ledger: real.ledger,
        index: real.index,
        log,
        sessions: {
          ...sessions,
          begin: async (ref, ask) => {
            const state = await sessions.begin(ref, ask);
            if (++waiting >= parties) release();
            await allLoaded;
            return state;
          },
        },
      });
    },
  });
}

describe("concurrent turns of one session", () => {
  it("two identical turns at once give the same bytes and one record per result", async () => {
    const session = sid("race-same");
    const app = racingApp(2);
    const body = JSON.stringify(conversation());
    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        app.fetch(
          request(compactPath(session), { body, config: ON }),
          env,
          createExecutionContext(),
        ),
      ),
    );
    const [ta, tb] = [await a!.text(), await b!.text()];
    expect(ta).toBe(tb);
    expect(summary(a!).offloaded).toBe(1);
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      totals: { calls: number };
      tool_results: unknown[];
    };
    expect(view.totals.calls).toBe(2);
    expect(view.tool_results).toHaveLength(1);
  });

  it("two turns deciding differently (offload vs size-only) render the standing decision in both answers", async () => {
    const session = sid("race-differ");
    const app = racingApp(2);
    const body = JSON.stringify(conversation());
    const configs = [ON, { tool_result_compaction_enabled: true }];
    const responses = await Promise.all(
      configs.map((config) =>
        app.fetch(request(compactPath(session), { body, config }), env, createExecutionContext()),
      ),
    );
    const outs = await Promise.all(responses.map(async (r) => JSON.parse(await r.text()) as Out));
    const rendered = outs.map((o) => o.messages[2]!.content[0]!.content!);
    expect(rendered[0]).toBe(rendered[1]);
    const view = (await (await call(`/v1/sessions/${session}`)).json()) as {
      tool_results: { tool_use_id: string; action: string }[];
    };
    expect(view.tool_results).toHaveLength(1);
    const action = view.tool_results[0]!.action;
    expect(["offloaded", "compacted"]).toContain(action);
    // Both reports describe the decision that stands, not the one that lost.
    for (const r of responses) expect(summary(r)[action as "offloaded" | "compacted"]).toBe(1);
  });

  it("three turns of different lengths at once agree on the shared result", async () => {
    const session = sid("race-lengths");
    const app = racingApp(3);
    const bodies = [
      conversation(),
      nextTurn(conversation(), 3),
      nextTurn(nextTurn(conversation(), 3), 4),
    ].map((c) => JSON.stringify(c));
    const responses = await Promise.all(
      bodies.map((body) =>
        app.fetch(
          request(compactPath(session), { body, config: ON }),
          env,
          createExecutionContext(),
        ),
      ),
    );
    const rendered = await Promise.all(
      responses.map(
        async (r) => (JSON.parse(await r.text()) as Out).messages[2]!.content[0]!.content!,
      ),
    );
    expect(new Set(rendered).size).toBe(1);
    expect(rendered[0]).toMatch(/trm_[0-9a-f]{24}/);
  });
});
