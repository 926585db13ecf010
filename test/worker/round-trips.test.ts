// What a turn asks of its session before the answer, counted at the session-state port the store composes (the
// SessionDO's RPC client), with work handed to waitUntil collected and run after the answer: a steady turn is
// one call before the answer and its line after it, whether compacted or proxied. (The rows each call writes,
// and every backend's calls, are a bench: `npm run bench -- rows`.)
import { createExecutionContext, env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import type { SessionState } from "../../src/store/ports.ts";
import { anthropicMessage } from "../support/providers.ts";
import { compactPath, conversation, ON, request, sid, summary } from "./helpers.ts";

const calls: string[] = [];
let deferred: (() => Promise<unknown>)[] = [];

/** The session state with every call it gets named. */
function counted(port: SessionState): SessionState {
  return Object.fromEntries(
    Object.entries(port).map(([name, method]) => [
      name,
      (...a: unknown[]) => {
        calls.push(name);
        return (method as (...x: unknown[]) => unknown)(...a);
      },
    ]),
  ) as unknown as SessionState;
}

const hello = anthropicMessage("msg_hello", [{ text: "Hello." }], { input: 10, output: 2 });
const app = createApp({
  log: () => {},
  fetch: async () =>
    new Response(JSON.stringify(hello), { headers: { "content-type": "application/json" } }),
  store: (e, settings, log) => {
    const real = defaultParts(e, settings, log);
    return new ComposedStore({
      ...real,
      sessions: counted(real.sessions),
      defer: (work) => void deferred.push(work),
    });
  },
});

beforeEach(() => {
  calls.length = 0;
  deferred = [];
});

/** One call: the session calls it waited for, then those that ran after its answer. */
async function turn(path: string, init: Parameters<typeof request>[1] = {}) {
  calls.length = 0;
  deferred = [];
  const res = await app.fetch(request(path, init), env, createExecutionContext());
  await res.text();
  const before = [...calls];
  calls.length = 0;
  while (deferred.length > 0) await deferred.shift()!();
  return { res, before, after: [...calls] };
}

describe("a turn's calls to its session", () => {
  it("compact: a first sight begins and commits before the answer; a steady turn only begins", async () => {
    const session = sid("rt-compact");
    const first = await turn(compactPath(session), { body: conversation(), config: ON });
    expect(summary(first.res).offloaded).toBe(1);
    expect(first.before).toEqual(["begin", "commit"]);
    expect(first.after).toEqual([]);
    const steady = await turn(compactPath(session), { body: conversation(), config: ON });
    expect(summary(steady.res)).toMatchObject({ offloaded: 1, new_decisions: 0 });
    expect(steady.before).toEqual(["begin"]);
    // Its line, after the answer: one call, one transaction.
    expect(steady.after).toEqual(["commit"]);
  });

  it("compact with the session off: one begin (the config), nothing else", async () => {
    const off = await turn(compactPath(sid("rt-off")), { body: conversation() });
    expect(summary(off.res).enabled).toBe(false);
    expect(off.before).toEqual(["begin"]);
    expect(off.after).toEqual([]);
  });

  it("compact on by the session's own layer alone: the session is asked again once the request is read", async () => {
    const session = sid("rt-layer");
    await turn(`/v1/sessions/${session}/config`, { method: "PUT", body: ON });
    const first = await turn(compactPath(session), { body: conversation() });
    expect(summary(first.res).offloaded).toBe(1);
    expect(first.before).toEqual(["begin", "begin", "commit"]);
  });

  it("proxy: a steady call is one begin before the provider; its line and usage follow the answer in one call", async () => {
    const session = sid("rt-proxy");
    const init = {
      key: null,
      headers: {
        "x-offload-key": "test-key-acme-0001",
        "x-offload-session": session,
        "x-offload-config": JSON.stringify(ON),
        "x-api-key": "sk-test",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify(conversation()),
    };
    const first = await turn("/anthropic/v1/messages", init);
    expect(first.res.status).toBe(200);
    expect(first.before).toEqual(["begin", "commit"]);
    expect(first.after).toEqual(["finish"]);
    const steady = await turn("/anthropic/v1/messages", init);
    expect(steady.before).toEqual(["begin"]);
    expect(steady.after).toEqual(["commit"]);
    const report = await app.fetch(
      request(`/v1/sessions/${session}/report`),
      env,
      createExecutionContext(),
    );
    const turns = ((await report.json()) as { turns: { billed?: { calls: number } }[] }).turns;
    // Both lines carry the provider's usage, the steady one's written with it.
    expect(turns.map((t) => t.billed?.calls)).toEqual([1, 1]);
  });
});
