/**
 * The SessionDO's writes of a turn: `commit` and `addRecords` (records admitted under the turn's
 * lease, then inserted, first writer wins) and `noteRecall`. Each runs its SQL in one transaction,
 * the held turn lines first; the tenant's deltas are noted on the session's copy for the alarm's
 * exchange. A commit that only logs a turn is held in memory instead (held-writes.ts).
 */
import type { TurnCommit } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { SessionCommitResult } from "../store/ports.ts";
import {
  type RecordsBatch,
  type RecordsResult,
  refusalOf,
  type TurnLease,
} from "../store/turn-protocol.ts";
import { admitted, isGone, orphansOf } from "./lifecycle.ts";
import { lastTurnOf } from "./report.ts";
import type { SessionBeginReads } from "./session-begin.ts";
import type { SessionLife, SessionParts } from "./session-life.ts";
import { applyCommit, indexDue, offloadsOf, TURN_LOG_LIMIT } from "./state.ts";

export class SessionCommits {
  readonly #p: SessionParts;
  readonly #life: SessionLife;
  readonly #reads: SessionBeginReads;

  constructor(parts: SessionParts, life: SessionLife, reads: SessionBeginReads) {
    this.#p = parts;
    this.#life = life;
    this.#reads = reads;
  }

  /**
   * The records of `records` that may stand, or null when the commit is refused (its bodies are
   * then noted for deletion by the alarm).
   */
  #admit(
    records: readonly ResultRecord[],
    lease: TurnLease | null | undefined,
    now: number,
  ): ResultRecord[] | null {
    const t = this.#p.t;
    const life = this.#life.get();
    if (refusalOf(lease, { epoch: life.epoch, purging: life.purging_since !== null }, now)) {
      const noted = orphansOf(records, (m) => t.names(m));
      for (const memId of noted)
        t.sql.exec(
          "INSERT INTO orphans (mem_id, deleted_at) VALUES (?, NULL) ON CONFLICT (mem_id) DO UPDATE SET deleted_at = NULL",
          memId,
        );
      return null;
    }
    return admitted(records, (m) => t.orphan(m), lease);
  }

  /** Inserts what stands (first writer wins); the tenant's deltas are noted for the alarm. */
  #insert(
    records: readonly ResultRecord[],
    shadow: boolean,
    now: number,
  ): { standing: ResultRecord[]; offloads: Record<string, number> } {
    const t = this.#p.t;
    const existing = new Map(
      t.records(records.map((r) => r.tool_use_id)).map((r) => [r.tool_use_id, r]),
    );
    const { insert, standing } = applyCommit(existing, records);
    for (const r of insert)
      t.sql.exec(
        "INSERT INTO records (tool_use_id, mem_id, record) VALUES (?, ?, ?)",
        r.tool_use_id,
        r.mem_id,
        JSON.stringify(r),
      );
    const offloads = offloadsOf(insert);
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach
    // "never recalled".
    if (!shadow)
      this.#p.stats.note(
        Object.fromEntries(Object.entries(offloads).map(([t, n]) => [t, { offloaded: n }])),
        now,
      );
    return { standing, offloads };
  }

  /** A batch of a large commit's records, ahead of the commit itself. */
  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    const now = Date.now();
    this.#p.t.open(true); // outside the transaction: a rollback must not leave #ready true without the tables
    const result = this.#p.storage.transactionSync((): RecordsResult => {
      this.#p.held.write();
      const ok = this.#admit(batch.records, batch.lease, now);
      if (ok === null) return { records: [], offloads: {}, refused: "deleted" };
      this.#p.t.touch(ref, now);
      const { standing, offloads } = this.#insert(ok, batch.shadow, now);
      return { records: standing, offloads };
    });
    await this.#life.arm();
    return result;
  }

  /** The turn's commit: its records, the session's row, its log line and latest decisions. */
  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    const now = Date.now();
    const t = this.#p.t;
    if (this.#onlyLogs(ref, commit, now)) {
      const last =
        commit.decisions === undefined
          ? null
          : lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total);
      const seq = this.#p.held.hold(commit.log, last, now);
      return { records: [], index_due: false, offloads: {}, turn_seq: seq };
    }
    t.open(true);
    const result = this.#p.storage.transactionSync((): SessionCommitResult => {
      this.#p.held.write();
      const ok = this.#admit(commit.records, commit.lease as TurnLease | undefined, now);
      if (ok === null)
        return { records: [], index_due: false, offloads: {}, turn_seq: 0, refused: "deleted" };
      // One write of the session's row per turn (rows written are what a turn costs most).
      const row = t.ensure(ref, now);
      this.#reads.keepFirstStats();
      const { standing, offloads } = this.#insert(ok, commit.log.shadow, now);
      const due = indexDue(now, row.last_indexed);
      t.sql.exec(
        "UPDATE session SET calls = calls + 1, recall_declared = max(recall_declared, ?), last_indexed = ?, last_active = ? WHERE id = 1",
        commit.recall_declared ? 1 : 0,
        due ? now : row.last_indexed,
        now,
      );
      const seq = t.sql
        .exec<{ seq: number }>(
          "INSERT INTO turns (log, at) VALUES (?, ?) RETURNING seq",
          JSON.stringify(commit.log),
          now,
        )
        .one().seq;
      t.sql.exec("DELETE FROM turns WHERE seq <= (SELECT max(seq) FROM turns) - ?", TURN_LOG_LIMIT);
      if (commit.decisions !== undefined) {
        t.sql.exec(
          "INSERT INTO last_turn (id, turn) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET turn = excluded.turn",
          JSON.stringify(lastTurnOf(commit.log, commit.decisions, now, commit.decisions_total)),
        );
      }
      // Written again: the session is alive, its tombstone (if any) is gone.
      const life = this.#life.get();
      if (life.tombstone_at !== null)
        this.#life.set({ ...life, tombstone_at: null, last_begin: null }, ref);
      return { records: standing, index_due: due, offloads, turn_seq: seq };
    });
    await this.#life.arm();
    return result;
  }

  /**
   * Whether a commit only logs its turn, so its line may be held (held-writes.ts): no records, no
   * new declaration, the index not due, no tombstone to clear, a lease that stands, and a session
   * whose row (and tenant copy) exists already. Reads only.
   */
  #onlyLogs(ref: SessionRef, commit: TurnCommit, now: number): boolean {
    if (commit.records.length > 0 || !this.#p.held.enabled()) return false;
    const row = this.#p.t.row(ref);
    if (row === null || (commit.recall_declared && row.recall_declared !== 1)) return false;
    if (indexDue(now, row.last_indexed) || this.#reads.holdsFirstStats()) return false;
    const life = this.#life.get();
    return (
      life.tombstone_at === null &&
      refusalOf(
        commit.lease as TurnLease | undefined,
        { epoch: life.epoch, purging: life.purging_since !== null },
        now,
      ) === null
    );
  }

  /** Counts a recall; returns the offloaded record's tool name, for the tenant's statistics. */
  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    const t = this.#p.t;
    // A recall of a session that is gone (deleted while the body was read) brings nothing back.
    if (t.row(ref) === null && isGone(this.#life.get())) return null;
    const now = Date.now();
    t.open(true);
    const tool = this.#p.storage.transactionSync(() => {
      // The recall goes on the latest line, which may be held.
      this.#p.held.write();
      t.touch(ref, now);
      t.sql.exec(
        "INSERT INTO recalls (mem_id, count) VALUES (?, 1) ON CONFLICT (mem_id) DO UPDATE SET count = count + 1",
        memId,
      );
      // The model read this back answering the latest logged turn's prompt.
      t.sql.exec("UPDATE turns SET recalls = recalls + 1 WHERE seq = (SELECT max(seq) FROM turns)");
      const named = t.sql
        .exec<{ record: string }>("SELECT record FROM records WHERE mem_id = ? LIMIT 1", memId)
        .toArray()[0];
      const record = named === undefined ? null : (JSON.parse(named.record) as ResultRecord);
      const tool = record !== null && record.action === "offloaded" ? record.tool_name : null;
      if (tool !== null) this.#p.stats.note({ [tool]: { recalls: 1 } }, now);
      return tool;
    });
    await this.#life.arm();
    return tool;
  }
}
