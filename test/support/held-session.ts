// A SessionDO driven directly over a fresh object's storage (inside runInDurableObject), with the hold
// window a test needs, and a probe that counts the rows each call writes: what the held-writes tests share.
import { env, runInDurableObject } from "cloudflare:test";
import type { TurnUsage } from "../../src/core/billing.ts";
import type { TurnCommit } from "../../src/core/ports.ts";
import type { SessionRef, TurnEstimate, TurnLog } from "../../src/core/types.ts";
import { SessionDO } from "../../src/session/session-do.ts";
import { sessionObjectName } from "../../src/session/state.ts";
import { freshRef, record, turnLog } from "./records.ts";
import { type Writes, writesOf } from "./sql-writes.ts";

export type Run<T> = (o: SessionDO, ref: SessionRef, probe: Probe) => Promise<T>;

/** Rows written and transactions, summed over the object's SQL while a call runs. */
export class Probe {
  readonly state: DurableObjectState;
  constructor(state: DurableObjectState) {
    this.state = state;
  }

  /** What `work` wrote (rows, transactions), with its result. */
  writes<T>(work: () => T | Promise<T>): Promise<Writes<T>> {
    return writesOf(this.state.storage, work);
  }

  turnsStored(): number {
    return this.count("turns");
  }

  count(table: string): number {
    return this.state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
  }

  sql(query: string, ...bindings: unknown[]): void {
    this.state.storage.sql.exec(query, ...bindings);
  }
}

/** A fresh session's object, driven through a SessionDO of its own with this window (ms). */
export function inSession<T>(windowMs: number, run: Run<T>, ref = freshRef("held")): Promise<T> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName(ref)));
  return runInDurableObject(stub, (_instance, state) =>
    run(sessionObject(state, windowMs), ref, new Probe(state)),
  );
}

/** A SessionDO over this storage (a new one over the same storage: the object restarted). */
export function sessionObject(state: DurableObjectState, windowMs: number): SessionDO {
  return new SessionDO(state, { ...env, OFFLOAD_TURN_LOG_WINDOW_MS: String(windowMs) });
}

export const log = (turn: number, over: Partial<TurnLog> = {}): TurnLog =>
  turnLog(turn, { results: 1, kept: 1, tokens_before: 10, tokens_after: 10, ...over });

/** The session's first turn: a record, the row, the index entry asked for. */
export const first: TurnCommit = { records: [record("a")], recall_declared: true, log: log(1) };
export const steady = (turn: number, over: Partial<TurnCommit> = {}): TurnCommit => ({
  records: [],
  recall_declared: true,
  log: log(turn),
  ...over,
});

export const usage: TurnUsage = {
  source: "client",
  model: null,
  calls: 1,
  tokens: { input: 10, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output: 3 },
  first: { input: 10, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output: 3 },
  answer_output: 3,
};

/** A measured turn's estimate (what the calibration learns from, with its usage). */
export const estimate: TurnEstimate = {
  sent: { text: 1000 },
  removed: { text: 500 },
  cached_share: 0,
  ttl: "5m",
  calibrated: false,
  model: "claude-sonnet-4-6",
};
