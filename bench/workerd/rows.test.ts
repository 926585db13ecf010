// Round trips and rows written per turn kind (`npm run bench -- rows`), counted where they happen: the
// SessionDO's and TenantDO's RPC methods as the objects serve them (they run in this isolate, so their
// prototypes can be watched), the ledger (R2) and index (KV) ports as the store calls them, and every SQLite
// statement the objects run (a cursor counts the rows it wrote: what Durable Objects bill). "Before the answer"
// is everything the response waited for; work handed to waitUntil is collected and run after it. Then the
// rows a steady turn writes, over 64 turns, on a fresh turn log and on a full one (every line then trims an
// old one). Not part of `npm test`: it prints, it asserts only that it measured something.
import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { SessionDO } from "../../src/store/session-do.ts";
import { sessionObjectName, TURN_LOG_LIMIT } from "../../src/store/state.ts";
import { TenantDO } from "../../src/store/tenant-do.ts";
import { anthropicMessage } from "../../test/support/providers.ts";
import {
  compactPath,
  conversation,
  memIdIn,
  nextTurn,
  ON,
  request,
  sid,
} from "../../test/worker/helpers.ts";

const calls: string[] = [];
/**
 * The cursors of the SQL statements run since the last reset (a cursor counts the rows it wrote), with the
 * object that ran them (the calls here run one at a time, so the object whose method is running is known).
 */
let cursors: { object: string; cursor: { rowsWritten: number } }[] = [];
let running = "";
const rowsWritten = (object = "do") =>
  cursors.reduce((n, c) => n + (c.object === object ? c.cursor.rowsWritten : 0), 0);
let deferred: (() => Promise<unknown>)[] = [];

/** Logs every call of these methods on `target` as `label.method`. */
function watch(target: object, label: string, methods: string[]): void {
  for (const m of methods) {
    const t = target as Record<string, (...a: unknown[]) => unknown>;
    const original = t[m]!;
    t[m] = async function (this: unknown, ...a: unknown[]) {
      calls.push(`${label}.${m}`);
      const outer = running;
      running = label;
      try {
        return await original.apply(this, a);
      } finally {
        running = outer;
      }
    };
  }
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

interface Measured {
  before: string[];
  after: string[];
  /** SessionDO rows written before and after the answer, and the TenantDO's. */
  rows: { before: number; after: number; tenant: number };
  text: string;
  /** The call's x-offload-summary, when it has one. */
  summary: { turn?: number };
}

/** One call: what it waited for, then what ran after its answer. */
async function turn(path: string, init: Parameters<typeof request>[1] = {}): Promise<Measured> {
  calls.length = 0;
  cursors = [];
  deferred = [];
  const res = await app.fetch(request(path, init), env, createExecutionContext());
  const text = await res.text();
  const before = [...calls];
  const rowsBefore = rowsWritten();
  const tenantBefore = rowsWritten("tenant");
  calls.length = 0;
  cursors = [];
  while (deferred.length > 0) await deferred.shift()!();
  // Background reads started before the answer (the tenant's learning) are done by now.
  await new Promise((r) => setTimeout(r, 10));
  const summary = JSON.parse(res.headers.get("x-offload-summary") ?? "{}") as { turn?: number };
  return {
    before,
    after: [...calls],
    rows: {
      before: rowsBefore,
      after: rowsWritten(),
      tenant: tenantBefore + rowsWritten("tenant"),
    },
    text,
    summary,
  };
}

const proxyHeaders = (session: string) => ({
  "x-offload-key": "test-key-acme-0001",
  "x-offload-session": session,
  "x-offload-config": JSON.stringify(ON),
  "x-api-key": "sk-test",
  "anthropic-version": "2023-06-01",
});

/** Calls by name, in order, with repeats counted: `do.begin, r2.put ×3`. */
function list(names: string[]): string {
  const out: string[] = [];
  for (const name of names) {
    const last = out[out.length - 1];
    const m = last === undefined ? null : /^(.*?)(?: ×(\d+))?$/.exec(last);
    if (m !== null && m[1] === name) out[out.length - 1] = `${name} ×${Number(m[2] ?? 1) + 1}`;
    else out.push(name);
  }
  return out.length === 0 ? "—" : out.join(", ");
}

/** The steady turns' rows over `n` turns of one session, its log fresh or full. */
async function steadyRows(kind: "compact" | "proxy", full: boolean, n = 64) {
  const session = sid(`rows-${kind}-${full ? "full" : "fresh"}`);
  const path = kind === "compact" ? compactPath(session) : "/anthropic/v1/messages";
  const init =
    kind === "compact"
      ? { body: conversation(), config: ON }
      : { key: null, headers: proxyHeaders(session), body: JSON.stringify(conversation()) };
  await turn(path, init);
  if (full) {
    const stub = env.SESSIONS.get(
      env.SESSIONS.idFromName(sessionObjectName({ tenant: "acme", session })),
    );
    await runInDurableObject(stub, (_i, state) => {
      const sql = state.storage.sql;
      sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO eo_turns (tenant, session, seq, turn, at, recalls, log)
         SELECT tenant, session, seq + i, turn, at, 0, log FROM eo_turns, n`,
        TURN_LOG_LIMIT,
      );
      sql.exec("UPDATE eo_sessions SET last_seq = last_seq + ?", TURN_LOG_LIMIT);
    });
  }
  let rows = 0;
  let before = 0;
  let tenant = 0;
  for (let i = 0; i < n; i++) {
    const m = await turn(path, init);
    rows += m.rows.before + m.rows.after;
    before += m.rows.before;
    tenant += m.rows.tenant;
  }
  return { rows: rows / n, before: before / n, tenant: tenant / n };
}

it("round trips and rows written per turn kind", async () => {
  const probe = env.SESSIONS.get(env.SESSIONS.idFromName("acme/rows-probe"));
  const sqlPrototype = await runInDurableObject(probe, (_i, state) =>
    Object.getPrototypeOf(state.storage.sql),
  );
  const exec = sqlPrototype.exec;
  sqlPrototype.exec = function (this: unknown, ...a: unknown[]) {
    const cursor = exec.apply(this, a);
    cursors.push({ object: running, cursor });
    return cursor;
  };
  watch(SessionDO.prototype, "do", [
    "begin",
    "records",
    "addRecords",
    "commit",
    "finish",
    "noteRecall",
    "recordUsage",
    "getConfig",
    "setConfig",
    "destroy",
    "purged",
    "end",
    "describe",
    "report",
  ]);
  watch(TenantDO.prototype, "tenant", ["read", "add"]);

  const lines: string[] = [];
  const row = (name: string, m: Measured) =>
    lines.push(
      `| ${name} | ${list(m.before)} | ${list(m.after)} | ${m.rows.before} / ${m.rows.after} | ${m.rows.tenant} |`,
    );
  const session = sid("rows-compact");
  const first = await turn(compactPath(session), { body: conversation(), config: ON });
  row("compact, first sight", first);
  row("compact, steady", await turn(compactPath(session), { body: conversation(), config: ON }));
  row(
    "compact, steady, our own output sent back",
    await turn(compactPath(session), {
      body: JSON.stringify(nextTurn(JSON.parse(first.text), 3)),
      config: ON,
    }),
  );
  row("compact, session off", await turn(compactPath(sid("rows-off")), { body: conversation() }));
  const layered = sid("rows-layer");
  await turn(`/v1/sessions/${layered}/config`, { method: "PUT", body: ON });
  row(
    "compact, on by the session's own layer",
    await turn(compactPath(layered), { body: conversation() }),
  );
  const adaptive = { ...ON, tool_result_offload_adaptive: true };
  const learning = sid("rows-adaptive");
  row(
    "compact, adaptive, first sight",
    await turn(compactPath(learning), { body: conversation(), config: adaptive }),
  );
  row(
    "compact, adaptive, steady",
    await turn(compactPath(learning), { body: conversation(), config: adaptive }),
  );
  const proxied = sid("rows-proxy");
  const init = { key: null, headers: proxyHeaders(proxied), body: JSON.stringify(conversation()) };
  row("proxy, first sight", await turn("/anthropic/v1/messages", init));
  row("proxy, steady", await turn("/anthropic/v1/messages", init));
  row(
    "usage posted",
    await turn(`/v1/sessions/${session}/usage`, {
      body: {
        turn: first.summary.turn,
        usage: { input_tokens: 100, output_tokens: 10 },
        format: "anthropic",
        model: "claude-sonnet-4-6",
      },
    }),
  );
  row(
    "recall",
    await turn(`/v1/sessions/${session}/recall`, {
      body: { mem_id: memIdIn(first.text), query: "item-7" },
    }),
  );
  row("delete", await turn(`/v1/sessions/${session}`, { method: "DELETE" }));

  const steady: string[] = [];
  for (const kind of ["compact", "proxy"] as const) {
    const fresh = await steadyRows(kind, false);
    const full = await steadyRows(kind, true);
    expect(fresh.rows).toBeGreaterThan(0);
    steady.push(
      `| ${kind} | ${fresh.rows.toFixed(2)} (${fresh.before.toFixed(2)} before the answer) | ${full.rows.toFixed(2)} (${full.before.toFixed(2)} before the answer) | ${full.tenant.toFixed(2)} |`,
    );
  }
  sqlPrototype.exec = exec;
  console.log(
    [
      "Round trips per turn kind (Worker → objects, R2, KV; a call listed before the answer that the turn does not wait for is marked by the code, not here) and rows written:",
      "| turn | before the answer | after the answer | SessionDO rows before / after | TenantDO rows |",
      "|---|---|---|---|---|",
      ...lines,
      "",
      `Rows written per steady turn (64 turns each; a full log holds ${TURN_LOG_LIMIT} lines):`,
      "| steady turn | SessionDO, fresh log | SessionDO, full log | TenantDO |",
      "|---|---:|---:|---:|",
      ...steady,
    ].join("\n"),
  );
  expect(lines.length).toBeGreaterThan(0);
});
