// Races with deletion and retention, interleaved deterministically: the store's ports are wrapped so a
// chosen call waits on a gate the test opens, so "the ledger write is done → the session is deleted (or
// purged by retention) → the commit arrives" happens in that order on every run. Nothing may be lost (no
// stub whose body is gone), a deleted session must not come back, and a body whose commit could not stand
// must not stay in R2 for good.
import {
  createExecutionContext,
  env,
  runDurableObjectAlarm,
  runInDurableObject,
  SELF,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp, defaultParts } from "../../src/app.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { ledgerPrefix } from "../../src/store/keys.ts";
import { TURN_LEASE_MS } from "../../src/store/lifecycle.ts";
import type { BodyLedgerPort, SessionState } from "../../src/store/ports.ts";
import { sessionObjectName } from "../../src/store/state.ts";
import {
  bound,
  call,
  catalog,
  compactPath,
  conversation,
  memIdIn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";

interface Gate {
  /** Resolves when the watched call has arrived (and waits). */
  arrived: Promise<void>;
  open(): void;
}

function gateOn<T extends object>(
  port: T,
  method: keyof T & string,
  when: "before" | "after",
): { port: T; gate: Gate } {
  let arrive!: () => void;
  let open!: () => void;
  const arrived = new Promise<void>((r) => {
    arrive = r;
  });
  const opened = new Promise<void>((r) => {
    open = r;
  });
  let first = true;
  const wrapped = new Proxy(port, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== "function") return value;
      const run = (...a: unknown[]) =>
        (value as (...x: unknown[]) => Promise<unknown>).apply(target, a);
      if (prop !== method) return run;
      return async (...a: unknown[]) => {
        if (!first) return run(...a);
        first = false;
        if (when === "before") {
          arrive();
          await opened;
          return run(...a);
        }
        const out = await run(...a);
        arrive();
        await opened;
        return out;
      };
    },
  });
  return { port: wrapped, gate: { arrived, open } };
}

/** An app whose store's session state and ledger go through `wrap`. */
function appWith(wrap: {
  sessions?: (p: SessionState) => SessionState;
  ledger?: (p: BodyLedgerPort) => BodyLedgerPort;
}) {
  return createApp({
    log: () => {},
    store: (e, settings, log) => {
      const real = defaultParts(e, settings, log);
      return new ComposedStore({
        ...real,
        sessions: wrap.sessions?.(real.sessions) ?? real.sessions,
        ledger: wrap.ledger?.(real.ledger) ?? real.ledger,
      });
    },
  });
}

function send(
  app: ReturnType<typeof createApp>,
  path: string,
  init: Parameters<typeof request>[1],
) {
  return Promise.resolve(app.fetch(request(path, init), env, createExecutionContext()));
}

const stubOf = (session: string) =>
  env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName({ tenant: "acme", session })));

async function bodies(session: string): Promise<string[]> {
  const prefix = ledgerPrefix({ tenant: "acme", session });
  return (await env.LEDGER.list({ prefix })).objects.map((o) => o.key.slice(prefix.length));
}

type Out = { messages: { content: { content?: unknown }[] }[] };
const resultOf = (text: string) => (JSON.parse(text) as Out).messages[2]!.content[0]!.content;

/** Moves the session's tombstone back by a turn's lease, as if that much time had passed. */
async function ageTombstone(session: string): Promise<void> {
  await runInDurableObject(stubOf(session), (_i, state) => {
    state.storage.sql.exec(
      "UPDATE eo_sessions SET tombstone_at = tombstone_at - ?, last_begin = last_begin - ?",
      TURN_LEASE_MS + 1,
      TURN_LEASE_MS + 1,
    );
  });
}

describe("a delete between a turn's ledger write and its commit", () => {
  it("refuses the commit: the result goes out full, the session stays deleted, the body is deleted", async () => {
    const session = sid("race-delete");
    let g!: Gate;
    const gated = appWith({
      sessions: (real) => {
        const w = gateOn(bound(real), "commit", "before");
        g = w.gate;
        return w.port;
      },
    });
    const turn = send(gated, compactPath(session), { body: conversation(), config: ON });
    await waitFor(() => g);
    await g.arrived; // the body is in R2, the commit waits
    expect(await bodies(session)).toHaveLength(1);

    const del = await SELF.fetch(request(`/v1/sessions/${session}`, { method: "DELETE" }));
    expect(del.status).toBe(204);
    g.open();
    const res = await turn;
    const text = await res.text();

    // Nothing lost: the result was not replaced by a stub naming a body the delete removed.
    expect(resultOf(text)).toBe(catalog());
    expect(
      summary(res)
        .errors.map((e) => e.message)
        .join(" "),
    ).toContain("deleted while this turn ran");
    // The session does not come back after its 204.
    expect((await call(`/v1/sessions/${session}`)).status).toBe(404);
    // The body the refused turn wrote after the purge is noted, and the alarm deletes it.
    expect(await runDurableObjectAlarm(stubOf(session))).toBe(true);
    expect(await bodies(session)).toEqual([]);
  });

  it("a body that lands after the purge, from a turn that never commits, is swept a lease later", async () => {
    const session = sid("race-late-put");
    let g!: Gate;
    let died = false;
    const gated = appWith({
      ledger: (real) => {
        const w = gateOn(real, "put", "before");
        g = w.gate;
        return w.port;
      },
      sessions: (real) => ({
        ...bound(real),
        // The Worker running the turn dies before its commit reaches the session.
        commit: async () => {
          died = true;
          throw new Error("the isolate was evicted");
        },
      }),
    });
    const turn = send(gated, compactPath(session), { body: conversation(), config: ON });
    await waitFor(() => g);
    await g.arrived; // the turn decided to offload; its write has not started
    expect(
      (await SELF.fetch(request(`/v1/sessions/${session}`, { method: "DELETE" }))).status,
    ).toBe(204);
    g.open(); // the write lands after the delete's purge
    const res = await turn;
    expect(resultOf(await res.text())).toBe(catalog());
    expect(died).toBe(true);
    expect(await bodies(session)).toHaveLength(1); // an orphan, for now

    // A lease after the purge, nothing that began before can still write: the sweep takes the prefix.
    await ageTombstone(session);
    expect(await runDurableObjectAlarm(stubOf(session))).toBe(true);
    expect(await bodies(session)).toEqual([]);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(404);
  });

  it("a turn that begins while a delete purges passes through, and the session is whole afterwards", async () => {
    const session = sid("race-purging");
    const mem = memIdIn(
      await (await call(compactPath(session), { body: conversation(), config: ON })).text(),
    );
    let g!: Gate;
    const deleting = appWith({
      ledger: (real) => {
        const w = gateOn(real, "delete", "before");
        g = w.gate;
        return w.port;
      },
    });
    const del = send(deleting, `/v1/sessions/${session}`, { method: "DELETE" });
    await waitFor(() => g);
    await g.arrived; // the generation moved; the purge is about to delete the bodies
    const during = await call(compactPath(session), { body: conversation(), config: ON });
    expect(resultOf(await during.text())).toBe(catalog());
    expect(summary(during).errors[0]?.message).toContain("being deleted");
    g.open();
    expect((await del).status).toBe(204);
    const recall = (await (
      await call(`/v1/sessions/${session}/recall`, { body: { mem_id: mem } })
    ).json()) as { is_error: boolean };
    expect(recall.is_error).toBe(true);
    // Afterwards the conversation starts afresh and its body is recallable again.
    const again = await call(compactPath(session), { body: conversation(), config: ON });
    const fresh = memIdIn(await again.text());
    const back = (await (
      await call(`/v1/sessions/${session}/recall`, {
        body: { mem_id: fresh, offset: 0, max_chars: 20 },
      })
    ).json()) as { is_error: boolean };
    expect(back.is_error).toBe(false);
  });

  it("a recall counted after the delete does not bring the session back", async () => {
    const session = sid("race-recall");
    const mem = memIdIn(
      await (await call(compactPath(session), { body: conversation(), config: ON })).text(),
    );
    let g!: Gate;
    const recalling = appWith({
      sessions: (real) => {
        const w = gateOn(bound(real), "noteRecall", "before");
        g = w.gate;
        return w.port;
      },
    });
    const recall = send(recalling, `/v1/sessions/${session}/recall`, { body: { mem_id: mem } });
    await waitFor(() => g);
    await g.arrived; // the body was read; the count waits
    expect(
      (await SELF.fetch(request(`/v1/sessions/${session}`, { method: "DELETE" }))).status,
    ).toBe(204);
    g.open();
    expect((await recall).status).toBe(200);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(404);
  });
});

describe("a retention purge during a turn", () => {
  it("moves the generation first: the turn's commit is refused and nothing is lost", async () => {
    const session = sid("race-retention");
    let g!: Gate;
    const gated = appWith({
      sessions: (real) => {
        const w = gateOn(bound(real), "commit", "before");
        g = w.gate;
        return w.port;
      },
    });
    // The session exists (an earlier turn), so it has a retention alarm.
    await call(compactPath(session), { body: conversation(catalog(10)), config: ON });
    const turn = send(gated, compactPath(session), { body: conversation(), config: ON });
    await waitFor(() => g);
    await g.arrived;
    // The turn ran past the session's retention: the alarm purges it now.
    await runInDurableObject(stubOf(session), (_i, state) => {
      state.storage.sql.exec("UPDATE eo_sessions SET last_active = last_active - ?", 604_800_001);
    });
    expect(await runDurableObjectAlarm(stubOf(session))).toBe(true);
    expect((await call(`/v1/sessions/${session}`)).status).toBe(404);
    g.open();
    const res = await turn;
    expect(resultOf(await res.text())).toBe(catalog());
    expect((await call(`/v1/sessions/${session}`)).status).toBe(404);
    expect(await runDurableObjectAlarm(stubOf(session))).toBe(true); // the refused turn's body
    expect(await bodies(session)).toEqual([]);
  });
});

/** The store (and its gate) is built when the request reaches the app: wait for it. */
async function waitFor<T>(get: () => T | undefined): Promise<void> {
  for (let i = 0; i < 1000 && get() === undefined; i++) await new Promise((r) => setTimeout(r, 1));
}
