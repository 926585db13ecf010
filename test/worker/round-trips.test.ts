// Round trips per turn kind, counted where they happen: the SessionDO's and TenantDO's RPC methods as the
// objects serve them (they run in this isolate, so their prototypes can be watched), and the ledger (R2) and
// index (KV) ports as the store calls them. "Before the answer" is everything the response waited for; work
// handed to waitUntil is collected and run after it, so a regression that moves a call onto the hot path
// (or adds one) fails here. The rows each phase writes are counted too (every SQLite statement the objects
// run, through their storage's shared prototype): a steady turn writes none.
import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { SessionDO } from "../../src/session/session-do.ts";
import { TenantDO } from "../../src/session/tenant-do.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { anthropicMessage } from "../support/providers.ts";
import {
  compactPath,
  conversation,
  memIdIn,
  nextTurn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";

const calls: string[] = [];
/** The cursors of the SQL statements run since the last reset (a cursor counts the rows it wrote). */
let cursors: { rowsWritten: number }[] = [];
const rowsWritten = () => cursors.reduce((n, c) => n + c.rowsWritten, 0);
let sqlPrototype: { exec: (...a: unknown[]) => { rowsWritten: number } };
let deferred: (() => Promise<unknown>)[] = [];

/** Logs every call of these methods on `target` as `label.method`; returns the undo. */
function watch(target: object, label: string, methods: string[]): () => void {
  const undo: (() => void)[] = [];
  for (const m of methods) {
    const t = target as Record<string, (...a: unknown[]) => unknown>;
    const original = t[m]!;
    t[m] = function (this: unknown, ...a: unknown[]) {
      calls.push(`${label}.${m}`);
      return original.apply(this, a);
    };
    undo.push(() => {
      t[m] = original;
    });
  }
  return () => {
    for (const u of undo) u();
  };
}

/** A port whose every method call is logged. */
function counted<T extends object>(port: T, label: string): T {
  return new Proxy(port, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== "function") return value;
      return (...a: unknown[]) => {
        calls.push(`${label}.${String(prop)}`);
        return (value as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
}

const SESSION_METHODS = [
  "begin",
  "load",
  "commit",
  "addRecords",
  "noteRecall",
  "getConfig",
  "setConfig",
  "proxyState",
  "finishProxyTurn",
  "destroy",
  "purged",
  "describe",
  "report",
];
const TENANT_METHODS = ["exchange", "merge", "stats", "add"];

const hello = anthropicMessage("msg_hello", [{ text: "Hello." }], { input: 10, output: 2 });
const upstream: typeof fetch = async () =>
  new Response(JSON.stringify(hello), { headers: { "content-type": "application/json" } });

const app = createApp({
  log: () => {},
  fetch: upstream,
  store: (e, settings, log) => {
    const real = defaultParts(e, settings, log);
    return new ComposedStore({
      ...real,
      ledger: counted(real.ledger, "r2"),
      index: counted(real.index, "kv"),
      defer: (work) => {
        deferred.push(work);
      },
    });
  },
});

beforeAll(async () => {
  const probe = env.SESSIONS.get(env.SESSIONS.idFromName("acme/rt-probe"));
  sqlPrototype = await runInDurableObject(probe, (_i, state) =>
    Object.getPrototypeOf(state.storage.sql),
  );
});

/** Keeps every statement's cursor; returns the undo. */
function countRows(): () => void {
  const exec = sqlPrototype.exec;
  sqlPrototype.exec = function (this: unknown, ...a: unknown[]) {
    const cursor = exec.apply(this, a);
    cursors.push(cursor);
    return cursor;
  };
  return () => {
    sqlPrototype.exec = exec;
  };
}

let undo: (() => void)[] = [];
beforeEach(() => {
  calls.length = 0;
  deferred = [];
  undo = [
    watch(SessionDO.prototype, "do", SESSION_METHODS),
    watch(TenantDO.prototype, "tenant", TENANT_METHODS),
    countRows(),
  ];
});
afterEach(() => {
  for (const u of undo) u();
});

/** One call: what it waited for, then what ran after its answer. */
async function turn(
  path: string,
  init: Parameters<typeof request>[1] = {},
): Promise<{
  res: Response;
  text: string;
  before: string[];
  after: string[];
  rows: { before: number; after: number };
}> {
  calls.length = 0;
  cursors = [];
  deferred = [];
  const req = request(path, init);
  const res = await app.fetch(req, env, createExecutionContext());
  const text = await res.text();
  const before = [...calls];
  const rowsBefore = rowsWritten();
  calls.length = 0;
  cursors = [];
  for (const work of deferred) await work();
  return {
    res,
    text,
    before,
    after: [...calls],
    rows: { before: rowsBefore, after: rowsWritten() },
  };
}

const proxyHeaders = (session: string, config: object = ON) => ({
  "x-offload-key": "test-key-acme-0001",
  "x-offload-session": session,
  "x-offload-config": JSON.stringify(config),
  "x-api-key": "sk-test",
  "anthropic-version": "2023-06-01",
});

describe("round trips per turn kind", () => {
  it("compact: a first sight is one begin, the ledger write and one commit; a steady turn is one begin", async () => {
    const session = sid("rt-compact");
    const first = await turn(compactPath(session), { body: conversation(), config: ON });
    expect(summary(first.res).offloaded).toBe(1);
    expect(first.before).toEqual(["do.begin", "r2.put", "do.commit"]);
    // The lookup index is written after the answer.
    expect(first.after.sort()).toEqual(["kv.putBody", "kv.putSession"]);

    const steady = await turn(compactPath(session), { body: conversation(), config: ON });
    expect(summary(steady.res)).toMatchObject({ offloaded: 1, new_decisions: 0 });
    expect(steady.before).toEqual(["do.begin"]);
    // Only the turn's log line, after the answer, held in the object's memory: no row written.
    expect(steady.after).toEqual(["do.commit"]);
    expect(steady.rows.after).toBe(0);
    // The first sight wrote its rows (so the count counts).
    expect(first.rows.before).toBeGreaterThan(0);

    // A steady turn that sends back our compacted output: the same single call.
    const compacted = await turn(compactPath(session), {
      body: JSON.stringify(nextTurn(JSON.parse(first.text), 3)),
      config: ON,
    });
    expect(compacted.before).toEqual(["do.begin"]);
    // Nothing written before the answer or after it. (The second turn's begin asked once for the
    // tenant's calibration, a meta row, as a session's copy does at most once a refresh period.)
    expect(compacted.rows).toEqual({ before: 0, after: 0 });
  });

  it("compact with the session off: one begin (the config), nothing else", async () => {
    const off = await turn(compactPath(sid("rt-off")), { body: conversation() });
    expect(summary(off.res).enabled).toBe(false);
    expect(off.before).toEqual(["do.begin"]);
    expect(off.after).toEqual([]);
  });

  it("compact enabled by the session's own layer: two reads the first time, then one (the isolate remembers)", async () => {
    const session = sid("rt-layer");
    await turn(`/v1/sessions/${session}/config`, { method: "PUT", body: ON });
    const first = await turn(compactPath(session), { body: conversation() });
    expect(summary(first.res).offloaded).toBe(1);
    expect(first.before).toEqual(["do.begin", "do.load", "r2.put", "do.commit"]);
    const second = await turn(compactPath(session), { body: conversation() });
    expect(second.before).toEqual(["do.begin"]);
  });

  it("the adaptive gate reads the tenant's statistics from the session's copy: nothing tenant-wide on a steady turn", async () => {
    const session = sid("rt-adaptive");
    const adaptive = { ...ON, tool_result_offload_adaptive: true };
    const first = await turn(compactPath(session), { body: conversation(), config: adaptive });
    // A brand-new session asks its shard once (the shard may ask the tenant's object for a name it
    // never met); its deltas leave later, from the session's alarm.
    expect(first.before.filter((c) => c.startsWith("do.") || c.startsWith("r2."))).toEqual([
      "do.begin",
      "r2.put",
      "do.commit",
    ]);
    expect(first.before.filter((c) => c === "tenant.exchange")).toHaveLength(1);
    const steady = await turn(compactPath(session), { body: conversation(), config: adaptive });
    expect(steady.before).toEqual(["do.begin"]);
    expect(steady.after).toEqual(["do.commit"]);
  });

  it("proxy: a steady call is one begin before the provider; the log line follows the answer", async () => {
    const session = sid("rt-proxy");
    const body = JSON.stringify(conversation());
    const init = { key: null, headers: proxyHeaders(session), body };
    const first = await turn("/anthropic/v1/messages", init);
    expect(first.res.status).toBe(200);
    expect(first.before).toEqual(["do.begin", "r2.put", "do.commit"]);
    // The provider's usage goes on the turn's line after the answer (calibration learned in the
    // session's copy: nothing tenant-wide).
    expect(first.after.filter((c) => !c.startsWith("kv."))).toEqual(["do.finishProxyTurn"]);
    const steady = await turn("/anthropic/v1/messages", init);
    expect(steady.res.status).toBe(200);
    expect(steady.before).toEqual(["do.begin"]);
    expect(steady.after).toEqual(["do.commit", "do.finishProxyTurn"]);
    const report = await turn(`/v1/sessions/${session}/report`);
    const turns = (JSON.parse(report.text) as { turns: { billed?: { calls: number } }[] }).turns;
    // Both lines carry the provider's usage, the steady one's written after its deferred commit.
    expect(turns.map((t) => t.billed?.calls)).toEqual([1, 1]);
  });

  it("recall: the config and the body are read at once, then the recall is counted", async () => {
    const session = sid("rt-recall");
    const mem = memIdIn(
      (await turn(compactPath(session), { body: conversation(), config: ON })).text,
    );
    const recall = await turn(`/v1/sessions/${session}/recall`, {
      body: { mem_id: mem, query: "item-7" },
    });
    expect(recall.before.sort()).toEqual(["do.getConfig", "do.noteRecall", "r2.get"]);
  });

  it("delete: the generation moves, the backends are purged, the purge is confirmed", async () => {
    const session = sid("rt-delete");
    await turn(compactPath(session), { body: conversation(), config: ON });
    const del = await turn(`/v1/sessions/${session}`, { method: "DELETE" });
    expect(del.res.status).toBe(204);
    const sessionCalls = del.before.filter((c) => c.startsWith("do."));
    expect(sessionCalls).toEqual(["do.destroy", "do.purged"]);
    expect(del.before).toContain("r2.delete");
  });
});
