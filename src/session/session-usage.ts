/**
 * The SessionDO's writes after a turn's answer: the proxy's note, usage and memos on the turn's
 * line (`finishProxyTurn`), a client's measured usage (`recordUsage`), and the calibration each
 * measured turn teaches the session's copy of the tenant's.
 */
import { promptOf, type TurnUsage } from "../core/billing.ts";
import { calibrationReady, claimedTokens } from "../core/calibration.ts";
import { resolveModel } from "../core/pricing.ts";
import type { ProxyTurnNote, SessionRef, TurnEstimate, TurnLog } from "../core/types.ts";
import type { ProxyTurn } from "../proxy/port.ts";
import { isGone } from "./lifecycle.ts";
import type { SessionLife, SessionParts } from "./session-life.ts";
import { MEMO_LIMIT } from "./state.ts";
import { findTurn, type TurnKey, type UsageOutcome, withUsage } from "./usage.ts";

export class SessionUsage {
  readonly #p: SessionParts;
  readonly #life: SessionLife;

  constructor(parts: SessionParts, life: SessionLife) {
    this.#p = parts;
    this.#life = life;
  }

  /** The proxy's hops, usage and memos, after the provider answered. */
  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    const t = this.#p.t;
    // Deleted while the provider answered: the session stays gone.
    if (t.row(ref) === null && isGone(this.#life.get())) return;
    t.open(true);
    const seq = turn.turn_seq;
    const held = this.#p.held;
    const now = Date.now();
    // A held line (a steady turn's) takes the note where it is, and the sample its usage teaches is
    // held with it: without memos, nothing is written now.
    const onHeld = () =>
      seq !== null && held.update(seq, (log) => this.#noted(seq, log, turn), now);
    if (turn.memos.length > 0 || !onHeld())
      this.#p.storage.transactionSync(() => {
        if (!onHeld()) {
          held.write();
          t.touch(ref, now);
          const line =
            seq === null
              ? undefined
              : t.sql
                  .exec<{ log: string }>("SELECT log FROM turns WHERE seq = ?", seq)
                  .toArray()[0];
          if (seq !== null && line !== undefined) {
            const log = this.#noted(seq, JSON.parse(line.log) as TurnLog, turn);
            t.sql.exec("UPDATE turns SET log = ? WHERE seq = ?", JSON.stringify(log), seq);
          }
        }
        for (const memo of turn.memos)
          t.sql.exec("INSERT INTO memos (memo) VALUES (?)", JSON.stringify(memo));
        if (turn.memos.length > 0)
          t.sql.exec("DELETE FROM memos WHERE seq <= (SELECT max(seq) FROM memos) - ?", MEMO_LIMIT);
      });
    await this.#life.arm();
  }

  /** A line with the proxy's note, and its usage (learned once: a repeat changes nothing). */
  #noted(seq: number, line: TurnLog, turn: ProxyTurn): TurnLog {
    const note: ProxyTurnNote = {
      hops: turn.note.hops,
      recalls: turn.note.recalls,
      exhausted: turn.note.exhausted,
    };
    const log: TurnLog = { ...line, proxy: note };
    if (turn.usage === undefined || log.usage !== undefined) return log;
    const usage = this.#learn(turn.usage, turn.estimate ?? log.estimate ?? null);
    return withUsage(seq, log, usage).log ?? log;
  }

  /**
   * Keeps a turn's measured usage on its log line (the first report stands; the same numbers again
   * change nothing). Null for an unknown session.
   */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const t = this.#p.t;
    if (t.row(ref) === null) return null;
    const held = this.#p.held;
    // A held line takes the usage where it is (held lines are the newest: a turn number names the
    // newest line of that turn), and the sample it teaches is held with it: nothing is written now.
    const line = findTurn(held.lines(), key);
    const outcome =
      line === undefined
        ? this.#p.storage.transactionSync(() => this.#recordWritten(key, usage))
        : this.#record(line, usage, (log) => held.update(line.seq, () => log));
    // A sample learned: the alarm sends it with the next exchange.
    if (outcome.status === "recorded") await this.#life.arm();
    return outcome;
  }

  /** Usage on a written line (what is held is written first), in the caller's transaction. */
  #recordWritten(key: TurnKey, usage: TurnUsage): UsageOutcome {
    const t = this.#p.t;
    this.#p.held.write();
    const lines = t.sql
      .exec<{ seq: number; log: string }>(
        "seq" in key
          ? "SELECT seq, log FROM turns WHERE seq = ?"
          : "SELECT seq, log FROM turns WHERE json_extract(log, '$.turn') = ? ORDER BY seq DESC LIMIT 1",
        "seq" in key ? key.seq : key.turn,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, log: JSON.parse(r.log) as TurnLog }));
    const line = findTurn(lines, key);
    if (line === undefined) return { status: "unknown_turn" };
    return this.#record(line, usage, (log) =>
      t.sql.exec("UPDATE turns SET log = ? WHERE seq = ?", JSON.stringify(log), line.seq),
    );
  }

  /** The usage kept on `line` (by `keep`) and learned from, the first time it is reported. */
  #record(
    line: { seq: number; log: TurnLog },
    usage: TurnUsage,
    keep: (log: TurnLog) => unknown,
  ): UsageOutcome {
    const next = withUsage(line.seq, line.log, usage);
    if (next.outcome.status === "recorded" && next.outcome.estimate !== null)
      this.#learn(usage, next.outcome.estimate);
    if (next.log !== null) keep(next.log);
    return next.outcome;
  }

  /**
   * A measured turn calibrates the tenant's estimates for its model: the session's copy at once (in
   * memory, its sample held with the lines: held-writes.ts), the tenant's with the next exchange
   * (calibration-copy.ts). The client's own call against the request as sent (the hops' calls are
   * requests we built, not estimated). Returns the usage with the removed tokens at the refined
   * calibration, once it is ready. In the caller's transaction, if any (held, it writes nothing).
   */
  #learn(usage: TurnUsage, estimate: TurnEstimate | null): TurnUsage {
    const model = estimate === null ? undefined : resolveModel(usage.model ?? estimate.model)?.id;
    if (estimate === null || model === undefined) return usage;
    const cal = this.#p.held.learn(
      { model, estimate: estimate.sent, measured: promptOf(usage.first) },
      Date.now(),
    );
    return calibrationReady(cal)
      ? { ...usage, removed_calibrated: claimedTokens(cal, estimate.removed) }
      : usage;
  }
}
