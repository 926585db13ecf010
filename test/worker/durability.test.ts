// What a client was told is durable: usage answered `recorded` survives a restart of the session's object right
// after (every Durable Object aborted: its memory gone, its storage kept), a retry after the restart changes
// nothing, and no seq is ever issued twice in the session, restarts included.
import {
  abortAllDurableObjects,
  createExecutionContext,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { anthropicMessage } from "../support/providers.ts";
import {
  call,
  catalog,
  compactPath,
  conversation,
  nextTurn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";
import { mockProvider } from "./proxy-mock.ts";

interface Line {
  turn: number;
  billed?: { calls: number };
  usage?: unknown;
}

const usageBody = (seq: number, input: number) => ({
  seq,
  format: "anthropic",
  model: "claude-sonnet-4-6",
  usage: { input_tokens: input, cache_read_input_tokens: 0, output_tokens: 12 },
});

async function lines(session: string): Promise<Line[]> {
  const res = await call(`/v1/sessions/${session}/report`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { turns: Line[] }).turns;
}

describe("usage answered `recorded`, then the object restarts", () => {
  it("is still there, a retry is idempotent, and the next turns get new seqs", async () => {
    const session = sid("durable-usage");
    const first = await call(compactPath(session), { body: conversation(), config: ON });
    const seq = summary(first).seq!;
    expect(seq).toBeGreaterThan(0);
    const posted = await call(`/v1/sessions/${session}/usage`, { body: usageBody(seq, 900) });
    expect(posted.status).toBe(200);
    expect(await posted.json()).toMatchObject({ status: "recorded", seq });

    // A deploy, a crash: every object's memory is gone; its storage is what it wrote.
    await abortAllDurableObjects();

    expect((await lines(session)).map((l) => l.billed?.calls)).toEqual([1]);
    const again = await call(`/v1/sessions/${session}/usage`, { body: usageBody(seq, 900) });
    expect(await again.json()).toMatchObject({ status: "unchanged", seq });
    const other = await call(`/v1/sessions/${session}/usage`, { body: usageBody(seq, 901) });
    expect(other.status).toBe(409);

    // A turn after the restart that offloads another result (its line is written with its records):
    // its seq was never issued before; nor is the next one's, after another restart.
    const more = nextTurn(nextTurn(conversation(), 3, catalog(1600)), 4);
    const later = await call(compactPath(session), { body: more, config: ON });
    expect(summary(later).offloaded).toBe(2);
    const next = summary(later).seq!;
    expect(next).toBeGreaterThan(seq);
    await abortAllDurableObjects();
    const last = await call(compactPath(session), {
      body: nextTurn(nextTurn(more, 5, catalog(1700)), 6),
      config: ON,
    });
    expect(summary(last).seq!).toBeGreaterThan(next);
    const turns = await lines(session);
    expect(turns).toHaveLength(3);
    expect(turns[0]!.billed?.calls).toBe(1);
  });

  it("a steady turn's line and the provider's usage are written together: both there after a restart", async () => {
    const session = sid("durable-proxy");
    const headers = {
      "x-offload-key": "test-key-acme-0001",
      "x-offload-session": session,
      "x-offload-config": JSON.stringify(ON),
      "x-api-key": "sk-test",
      "anthropic-version": "2023-06-01",
    };
    const hello = () =>
      new Response(
        JSON.stringify(anthropicMessage("msg_1", [{ text: "Hello." }], { input: 10, output: 2 })),
        { headers: { "content-type": "application/json" } },
      );
    mockProvider(hello, hello);
    // The app called as the runtime calls it, so the work it hands to waitUntil can be waited for: the
    // steady turn's line and usage are written after its answer.
    const app = createApp({ log: () => {} });
    for (let i = 0; i < 2; i++) {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        request("/anthropic/v1/messages", {
          key: null,
          headers,
          body: JSON.stringify(conversation()),
        }),
        env,
        ctx,
      );
      expect(res.status).toBe(200);
      await res.text();
      await waitOnExecutionContext(ctx);
    }
    await abortAllDurableObjects();
    const turns = await lines(session);
    expect(turns.map((t) => t.billed?.calls)).toEqual([1, 1]);
  });
});
