/**
 * A composed store's commit of a turn: the records in runs under the RPC budget (the last with the
 * turn's log line), then the index entry and the tenant's statistics where they are this store's
 * to write. A steady turn (nothing new to save) is handed to `defer` when the caller gives one, so
 * the answer does not wait for its log line.
 */
import type { CommitResult, TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import { LAST_DECISIONS_LIMIT } from "../session/report.ts";
import type { BackendCalls } from "./backend-calls.ts";
import type { HeldLease } from "./turn-begin.ts";
import { batches, RPC_BUDGET_BYTES, sizeOf, type TurnLease } from "./turn-protocol.ts";

export class TurnCommits {
  readonly #calls: BackendCalls;
  /** The log line the last commit wrote (the proxy notes its hops on it). */
  lastTurnSeq: number | null = null;
  /** This call's view of recall_declared (a commit that would only repeat it is a steady one). */
  declared = false;
  /** A steady turn's commit, deferred: starts it (or joins it) and resolves once it is written. */
  pendingLog: (() => Promise<void>) | null = null;

  constructor(calls: BackendCalls) {
    this.#calls = calls;
  }

  /** The turn's commit: now, or after the answer for a steady turn where the caller can defer. */
  async commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult> {
    const held = commit.lease as HeldLease | undefined;
    const lease = held === undefined ? undefined : { epoch: held.epoch, at: held.at };
    const decisions = commit.decisions;
    const sent: TurnCommit = {
      ...commit,
      ...(lease === undefined ? {} : { lease }),
      // The report keeps the last turn's latest decisions only: the rest need not travel.
      ...(decisions === undefined || decisions.length <= LAST_DECISIONS_LIMIT
        ? {}
        : {
            decisions: decisions.slice(-LAST_DECISIONS_LIMIT),
            decisions_total: decisions.length,
          }),
    };
    // A steady turn (nothing new decided, nothing new declared): its answer needs nothing from
    // this commit, which only logs the turn.
    const steady = commit.records.length === 0 && (this.declared || !commit.recall_declared);
    const defer = this.#calls.parts.defer;
    if (steady && defer !== undefined) {
      // The line is written after the answer; the proxy joins it before noting its hops.
      let write: Promise<void> | null = null;
      const once = () =>
        (write ??= this.#save(ref, sent).then(
          () => {},
          () => {},
        ));
      this.pendingLog = once;
      defer(once);
      return { records: new Map() };
    }
    const standing = await this.#save(ref, sent);
    return { records: new Map(standing.map((r) => [r.tool_use_id, r])) };
  }

  /**
   * Writes a commit: its records in runs under the RPC budget (the last with the turn's log line),
   * then the index entry and the tenant's statistics where they are this store's to write.
   */
  async #save(ref: SessionRef, commit: TurnCommit): Promise<ResultRecord[]> {
    const calls = this.#calls;
    const { sessions, index, tenants } = calls.parts;
    const runs =
      sessions.addRecords === undefined || sizeOf(commit.records) <= RPC_BUDGET_BYTES
        ? [commit.records]
        : batches(commit.records, RPC_BUDGET_BYTES);
    const standing: ResultRecord[] = [];
    const offloads: Record<string, number> = {};
    const lease = commit.lease as TurnLease | undefined;
    for (const run of runs.slice(0, -1)) {
      const part = await calls.guard("saving the session state", () =>
        sessions.addRecords!(ref, { records: run, lease, shadow: commit.log.shadow }),
      );
      if (part.refused !== undefined) throw refusal();
      standing.push(...part.records);
      for (const [tool, n] of Object.entries(part.offloads))
        offloads[tool] = (offloads[tool] ?? 0) + n;
    }
    const result = await calls.guard("saving the session state", () =>
      sessions.commit(ref, { ...commit, records: runs[runs.length - 1] ?? [] }),
    );
    if (result.refused !== undefined) throw refusal();
    standing.push(...result.records);
    for (const [tool, n] of Object.entries(result.offloads ?? {}))
      offloads[tool] = (offloads[tool] ?? 0) + n;
    this.lastTurnSeq = result.turn_seq;
    if (commit.recall_declared) this.declared = true;
    if (result.index_due)
      await calls.later("the session index write", () =>
        index.putSession(ref, { session: ref.session, created_at: calls.now() }),
      );
    const learned = Object.entries(offloads);
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach "never
    // recalled".
    if (tenants !== undefined && learned.length > 0 && !commit.log.shadow) {
      await calls.later(
        "the tenant statistics write",
        () =>
          tenants.add(
            ref.tenant,
            Object.fromEntries(learned.map(([tool, n]) => [tool, { offloaded: n }])),
          ),
        undefined,
        "stats_error",
      );
    }
    return standing;
  }
}

function refusal(): OffloadError {
  return new OffloadError(
    "storage_error",
    "the session was deleted while this turn ran; its new results stay full",
  );
}
