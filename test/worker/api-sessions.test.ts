import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SessionListSchema, SessionResponseSchema } from "../../src/routes/schemas/session.ts";
import { durableTenants } from "../../src/store/durable.ts";
import { indexBodyKey, indexSessionKey, ledgerPrefix } from "../../src/store/keys.ts";
import { TURN_LEASE_MS } from "../../src/store/lifecycle.ts";
import { SESSION_END_MS } from "../../src/store/session-lengths.ts";
import { sessionObjectName } from "../../src/store/state.ts";
import {
  call,
  compactPath,
  conversation,
  expectError,
  KEYS,
  memIdIn,
  nextTurn,
  ON,
  sid,
} from "./helpers.ts";

const stubOf = (tenant: string, session: string) =>
  env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName({ tenant, session })));

/** What the session's object holds: its own tables and their rows (the runtime's _cf_ tables aside). */
async function objectTables(tenant: string, session: string): Promise<Record<string, number>> {
  return runInDurableObject(stubOf(tenant, session), (_instance, state) => {
    const names = state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf%' AND name NOT LIKE 'sqlite%'",
      )
      .toArray()
      .map((r) => r.name);
    return Object.fromEntries(
      names.map((n) => [
        n,
        state.storage.sql.exec<{ c: number }>(`SELECT count(*) AS c FROM ${n}`).one().c,
      ]),
    );
  });
}

/**
 * After a purge: the session's tables are empty and only its lifecycle is kept, with an alarm for the
 * tombstone's sweep; once a turn's lease has passed, the alarm empties the object.
 */
async function expectTombstone(tenant: string, session: string): Promise<void> {
  const stub = stubOf(tenant, session);
  const rows = await objectTables(tenant, session);
  const own = ["records", "turns", "recalls", "tools", "memos", "memo_anchors", "orphans"];
  expect(own.filter((t) => (rows[`eo_${t}`] ?? 0) > 0)).toEqual([]);
  expect(rows.eo_sessions).toBe(1); // the lifecycle, no live session
  expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).not.toBeNull();
  await runInDurableObject(stub, (_i, state) => {
    const row = state.storage.sql
      .exec<{ created_at: number | null }>("SELECT created_at FROM eo_sessions")
      .one();
    expect(row.created_at).toBeNull();
    state.storage.sql.exec(
      "UPDATE eo_sessions SET tombstone_at = tombstone_at - ?",
      TURN_LEASE_MS + 1,
    );
  });
  expect(await runDurableObjectAlarm(stub)).toBe(true);
  expect(await objectTables(tenant, session)).toEqual({});
  expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
}

async function twoTurns(session: string): Promise<string> {
  const first = await call(compactPath(session), { body: conversation(), config: ON });
  const mem = memIdIn(await first.text());
  await call(compactPath(session), { body: nextTurn(conversation(), 3), config: ON });
  return mem;
}

describe("GET /v1/sessions/:id", () => {
  it("shows turns, tool results with tier/action/mem_id/sizes, and totals", async () => {
    const session = sid("describe");
    const mem = await twoTurns(session);
    const res = await call(`/v1/sessions/${session}`);
    expect(res.status).toBe(200);
    const view = SessionResponseSchema.parse(await res.json());
    expect(view).toMatchObject({ tenant: "acme", session, recall_declared: true, config: {} });
    // Small results are derived again each turn (no record): the view lists the decided ones.
    expect(view.tool_results.map((r) => [r.tool_use_id, r.tier, r.action])).toEqual([
      ["toolu_1", "large", "offloaded"],
    ]);
    const big = view.tool_results[0]!;
    expect(big).toMatchObject({
      mem_id: mem,
      tool_name: "dump",
      kind: "json",
      turn: 2,
      recalls: 0,
    });
    expect(big.sent_tokens).toBeLessThan(big.tokens / 10);
    expect(big.gate).toMatchObject({ fire: true });
    expect(view.turns.map((t) => t.turn)).toEqual([2, 3]);
    expect(view.totals).toMatchObject({
      calls: 2,
      turns_logged: 2,
      tool_results: 1,
      offloaded: 1,
      kept: 0,
      compacted: 0,
      recalls: 0,
    });
    expect(view.totals.saved_tokens).toBe(view.totals.tokens_before - view.totals.tokens_after);
    expect(view.totals.saved_tokens).toBeGreaterThan(0);
    expect(Date.parse(view.expires_at!) - Date.parse(view.last_active)).toBe(604_800_000);
  });

  it("answers 404 for an unknown session, and for another tenant's", async () => {
    const session = sid("describe-404");
    await twoTurns(session);
    const never = sid("never");
    await expectError(await call(`/v1/sessions/${never}`), 404, "not_found", "session");
    // Reading a session nobody wrote leaves no storage behind (no alarm would ever clean it up).
    await call(compactPath(never), { body: "{}" });
    await call(`/v1/sessions/${never}/recall`, { body: { mem_id: `trm_${"0".repeat(24)}` } });
    expect(await objectTables("acme", never)).toEqual({});
    await expectError(
      await call(`/v1/sessions/${session}`, { key: KEYS.globex }),
      404,
      "not_found",
    );
  });
});

describe("GET /v1/sessions", () => {
  it("lists the tenant's sessions from the index, pages with a cursor, and shows no other tenant's", async () => {
    const a = sid("list-a");
    const b = sid("list-b");
    await twoTurns(a);
    await twoTurns(b);
    const page = SessionListSchema.parse(await (await call("/v1/sessions?limit=1000")).json());
    expect(page.sessions.map((s) => s.session)).toEqual(expect.arrayContaining([a, b]));
    const globex = SessionListSchema.parse(
      await (await call("/v1/sessions", { key: KEYS.globex })).json(),
    );
    expect(globex.sessions.map((s) => s.session)).not.toContain(a);
    const first = SessionListSchema.parse(await (await call("/v1/sessions?limit=1")).json());
    expect(first.sessions).toHaveLength(1);
    expect(first.cursor).not.toBeNull();
    await expectError(await call("/v1/sessions?limit=0"), 400, "invalid_request", "query.limit");
  });
});

describe("DELETE /v1/sessions/:id", () => {
  it("removes the DO state, the R2 bodies and the KV entries, and nothing of other sessions", async () => {
    const session = sid("delete");
    const keep = sid("delete-keep");
    const mem = await twoTurns(session);
    const keptMem = await twoTurns(keep);
    await call(`/v1/sessions/${session}/recall`, { body: { mem_id: mem, query: "item-1" } });
    await call(`/v1/sessions/${session}/config`, { method: "PUT", body: ON });
    const ref = { tenant: "acme", session };

    expect((await env.LEDGER.list({ prefix: ledgerPrefix(ref) })).objects).toHaveLength(1);
    expect(await env.INDEX.get(indexBodyKey(ref, mem))).not.toBeNull();
    expect(await env.INDEX.getWithMetadata(indexSessionKey(ref))).toMatchObject({
      metadata: { session },
    });
    expect(await objectTables("acme", session)).toMatchObject({
      eo_sessions: 1,
      eo_records: 1,
      eo_turns: 2,
      eo_recalls: 1,
    });

    const res = await call(`/v1/sessions/${session}`, { method: "DELETE" });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");

    // The session's own state is gone at once; a tombstone (its generation) stays a turn's lease
    // long, so a turn that began before the delete cannot commit after it, then goes too.
    await expectTombstone("acme", session);
    expect((await env.LEDGER.list({ prefix: ledgerPrefix(ref) })).objects).toEqual([]);
    expect(await env.INDEX.get(indexBodyKey(ref, mem))).toBeNull();
    expect(await env.INDEX.get(indexSessionKey(ref))).toBeNull();
    await expectError(await call(`/v1/sessions/${session}`), 404, "not_found");
    const recall = (await (
      await call(`/v1/sessions/${session}/recall`, { body: { mem_id: mem } })
    ).json()) as { is_error: boolean };
    expect(recall.is_error).toBe(true);

    // The other session is whole.
    const other = { tenant: "acme", session: keep };
    expect((await env.LEDGER.list({ prefix: ledgerPrefix(other) })).objects).toHaveLength(1);
    expect(await env.INDEX.get(indexBodyKey(other, keptMem))).not.toBeNull();
    expect((await call(`/v1/sessions/${keep}`)).status).toBe(200);
  });

  it("is idempotent, and another tenant's DELETE touches nothing of ours", async () => {
    const session = sid("delete-tenant");
    await twoTurns(session);
    expect(
      (await call(`/v1/sessions/${session}`, { method: "DELETE", key: KEYS.globex })).status,
    ).toBe(204);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(200);
    expect((await call(`/v1/sessions/${sid("never")}`, { method: "DELETE" })).status).toBe(204);
  });

  it("starts afresh after a delete: the same conversation is decided again", async () => {
    const session = sid("delete-again");
    const mem = await twoTurns(session);
    await call(`/v1/sessions/${session}`, { method: "DELETE" });
    const again = await call(compactPath(session), { body: conversation(), config: ON });
    expect(memIdIn(await again.text())).toBe(mem);
    const view = SessionResponseSchema.parse(await (await call(`/v1/sessions/${session}`)).json());
    expect(view.totals.calls).toBe(1);
  });
});

describe("a session's end", () => {
  /** Sessions of `calls` calls that acme's learning counts. */
  const ended = async (calls: number) =>
    (await durableTenants(env.TENANTS).read("acme")).session_lengths?.counts.find(
      ([n]) => n === calls,
    )?.[1] ?? 0;

  it("an alarm counts a session idle for an hour into the tenant's lengths, once, and keeps the session", async () => {
    const session = sid("end");
    // Three calls: the first two are twoTurns', a third on the same conversation.
    await twoTurns(session);
    await call(compactPath(session), {
      body: nextTurn(nextTurn(conversation(), 3), 4),
      config: ON,
    });
    const stub = stubOf("acme", session);
    const before = await ended(3);
    // Not idle for an hour yet: nothing counted, the alarm stays armed.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await ended(3)).toBe(before);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).not.toBeNull();
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(
        "UPDATE eo_sessions SET last_active = last_active - ?",
        SESSION_END_MS,
      );
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await ended(3)).toBe(before + 1);
    // Counted once; the session is still there, and its retention's alarm armed.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await ended(3)).toBe(before + 1);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(200);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).not.toBeNull();
  });
});

describe("retention", () => {
  it("an alarm purges an idle session (state, bodies, index) once its retention has passed", async () => {
    const session = sid("retention");
    const mem = await twoTurns(session);
    const ref = { tenant: "acme", session };
    const stub = stubOf("acme", session);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).not.toBeNull();

    // Not idle long enough: the alarm re-arms itself and nothing goes.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(200);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).not.toBeNull();

    // Idle for longer than OFFLOAD_RETENTION_SECONDS (7 days by wrangler.toml).
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE eo_sessions SET last_active = last_active - ?", 604_800_001);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await env.LEDGER.list({ prefix: ledgerPrefix(ref) })).objects).toEqual([]);
    expect(await env.INDEX.get(indexBodyKey(ref, mem))).toBeNull();
    expect(await env.INDEX.get(indexSessionKey(ref))).toBeNull();
    await expectTombstone("acme", session);
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });
});
