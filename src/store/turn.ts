/**
 * A composed store's turn (the core's `Turn`): what the session's begin answered, with the
 * tenant's learning as cached (its tools' statistics, calibration, ended sessions' lengths), and
 * the turn's writes under its lease.
 *
 * - `read`: records of ids the begin did not look up, in runs under the call budget (a request read
 *   after the begin, attachment ids, the rest of a begin that hit its budget).
 * - `putBody`: the ledger first (durable before a stub names it), the lookup index after, best
 *   effort; refused once the turn is too old to land before the sweep a lease after a delete.
 * - `commit`: new records (first writer wins) and the turn's line in one transaction, a large
 *   commit's records in batches ahead of it. A steady turn (nothing new to save) writes nothing
 *   now: its line waits for `finish`, so the answer never waits for it, and its line and usage go
 *   in one transaction.
 * - `finish`: the line (if it waited), the proxy's note, the provider's usage and the memos; after
 *   the answer where the runtime can keep work alive (`defer`), unless memos must be there before
 *   the client's next request.
 */
import type { TurnUsage } from "../core/billing.ts";
import { type Calibration, calibrationReady } from "../core/calibration.ts";
import type { SessionLengths } from "../core/horizon.ts";
import { MEM_ID_PATTERN } from "../core/memid.ts";
import type {
  CommitResult,
  ExtractionCache,
  ToolStats,
  Turn,
  TurnAsk,
  TurnCommit,
  TurnFinish,
} from "../core/ports.ts";
import type { Problem } from "../core/problems.ts";
import type {
  BodyMeta,
  ProxyMemo,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnLog,
} from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { BackendCalls } from "./backend-calls.ts";
import { ledgerKey } from "./keys.ts";
import { PUT_DEADLINE_MS, type TurnLease } from "./lifecycle.ts";
import type {
  BodyLedgerPort,
  IndexPort,
  SessionCommit,
  SessionStart,
  SessionState,
  TenantAggregate,
  TenantDelta,
} from "./ports.ts";
import { LAST_DECISIONS_LIMIT } from "./report.ts";
import { batches, RPC_BUDGET_BYTES, sizeOf } from "./state.ts";
import { sampleOf } from "./usage.ts";

/** What a turn uses of its store. */
export interface TurnParts {
  calls: BackendCalls;
  sessions: SessionState;
  ledger: BodyLedgerPort;
  index: IndexPort;
  extractions: ExtractionCache | undefined;
  /** Adds to the tenant's learning (in the background, best effort). */
  learn(tenant: string, delta: TenantDelta, notes?: Problem[]): Promise<void>;
}

export class StoreTurn implements Turn {
  readonly config: Turn["config"];
  readonly records: ReadonlyMap<string, ResultRecord>;
  readonly recall_declared: boolean;
  readonly memos: readonly ProxyMemo[];
  readonly tool_stats: Readonly<Record<string, ToolStats>>;
  readonly session_tool_stats: Readonly<Record<string, ToolStats>>;
  readonly calibrations: Readonly<Record<string, Calibration>>;
  readonly gap_seconds: number | null;
  readonly idle_seconds: number | null;
  readonly session_lengths?: SessionLengths;
  readonly extractions: ExtractionCache | undefined;
  readonly notes: Problem[];
  readonly #p: TurnParts;
  readonly #ref: SessionRef;
  readonly #lease: TurnLease;
  /** When the begin's answer arrived, by this store's clock (the put deadline counts from it). */
  readonly #received: number;
  /** The ids the begin looked up. */
  readonly #asked: ReadonlySet<string>;
  /** A steady turn's commit, written by `finish`. */
  #waiting: SessionCommit | null = null;
  /** The commit's log line (its estimates teach the calibration once usage is known). */
  #log: TurnLog | null = null;
  #seq: number | null = null;
  #finished = false;

  constructor(
    parts: TurnParts,
    ref: SessionRef,
    ask: TurnAsk,
    start: SessionStart,
    tenant: TenantAggregate,
    notes: Problem[],
  ) {
    this.#p = parts;
    this.#ref = ref;
    this.#lease = start.lease!;
    this.#received = parts.calls.now();
    const looked = [...ask.ids, ...start.memos.flatMap((m) => m.calls.map((c) => c.id))];
    this.#asked = new Set(looked.slice(0, start.answered));
    this.config = start.config;
    this.records = new Map(start.records.map((r) => [r.tool_use_id, r]));
    this.recall_declared = start.recall_declared;
    this.memos = start.memos;
    this.tool_stats = Object.fromEntries(
      ask.names.flatMap((n) => (tenant.tools[n] === undefined ? [] : [[n, tenant.tools[n]!]])),
    );
    this.session_tool_stats = start.session_tool_stats;
    this.calibrations = calibrationsFor(start.calibrations, tenant.calibrations);
    this.gap_seconds = start.gap_seconds;
    this.idle_seconds = start.idle_seconds;
    if (tenant.session_lengths !== undefined) this.session_lengths = tenant.session_lengths;
    this.extractions = parts.extractions;
    this.notes = notes;
  }

  get seq(): number | null {
    return this.#seq;
  }

  async read(ids: readonly string[]): Promise<ReadonlyMap<string, ResultRecord>> {
    const out = new Map<string, ResultRecord>();
    const missing: string[] = [];
    for (const id of ids) {
      const known = this.records.get(id);
      if (known !== undefined) out.set(id, known);
      else if (!this.#asked.has(id)) missing.push(id);
    }
    const { calls, sessions } = this.#p;
    for (let run of batches([...new Set(missing)], RPC_BUDGET_BYTES / 2)) {
      // Each run asked again from where an answer stopped at its own budget.
      for (;;) {
        const part = await calls.guard("reading the session state", () =>
          sessions.records(this.#ref, run),
        );
        for (const r of part.records) out.set(r.tool_use_id, r);
        if (part.answered >= run.length || part.answered <= 0) break;
        run = run.slice(part.answered);
      }
    }
    return out;
  }

  async putBody(body: string, meta: BodyMeta): Promise<void> {
    const { calls, ledger, index } = this.#p;
    // A write started this late might land after the sweep a lease after a delete: not started.
    if (calls.now() - this.#received > PUT_DEADLINE_MS)
      throw new OffloadError("storage_error", "the turn ran too long to store more bodies");
    await calls.guard("the ledger write", () => ledger.put(this.#ref, body, meta), "ledger");
    await calls.later(
      "the mem_id index write",
      () => index.putBody(this.#ref, { location: ledgerKey(this.#ref, meta.mem_id), meta }),
      "index",
      this.notes,
      meta.mem_id,
    );
  }

  async getBody(memId: string): Promise<StoredBody | null> {
    if (!MEM_ID_PATTERN.test(memId)) return null;
    return this.#p.calls.guard(
      "the ledger read",
      () => this.#p.ledger.get(this.#ref, memId),
      "ledger",
    );
  }

  async hasBody(memId: string): Promise<boolean> {
    if (!MEM_ID_PATTERN.test(memId)) return false;
    const meta = await this.#p.calls.guard(
      "the ledger read",
      () => this.#p.ledger.head(this.#ref, memId),
      "ledger",
    );
    return meta !== null;
  }

  async commit(commit: TurnCommit): Promise<CommitResult> {
    const decisions = commit.decisions;
    const sent: SessionCommit = {
      records: commit.records,
      recall_declared: commit.recall_declared,
      log: commit.log,
      lease: this.#lease,
      // The report keeps the last turn's latest decisions only: the rest need not travel.
      ...(decisions === undefined
        ? {}
        : {
            decisions: decisions.slice(-LAST_DECISIONS_LIMIT),
            decisions_total: decisions.length,
          }),
    };
    this.#log = commit.log;
    // A steady turn (nothing new decided, nothing newly declared) needs nothing back from its
    // commit: its line waits for the finish.
    if (commit.records.length === 0 && (this.recall_declared || !commit.recall_declared)) {
      this.#waiting = sent;
      return { records: new Map() };
    }
    const standing = await this.#write(sent);
    if (standing === null) throw refusal();
    return { records: new Map(standing.map((r) => [r.tool_use_id, r])) };
  }

  /**
   * A commit written: its records in runs under the call budget (the last with the turn's line),
   * then the index entry and the tenant's statistics, in the background. Null: refused (the
   * session was deleted since the turn began, or the turn ran too long), nothing written.
   */
  async #write(commit: SessionCommit): Promise<ResultRecord[] | null> {
    const { calls, sessions } = this.#p;
    const ref = this.#ref;
    const runs =
      sizeOf(commit.records) <= RPC_BUDGET_BYTES
        ? [commit.records]
        : batches(commit.records, RPC_BUDGET_BYTES);
    const standing: ResultRecord[] = [];
    const offloads: Record<string, number> = {};
    const count = (part: Record<string, number>) => {
      for (const [tool, n] of Object.entries(part)) offloads[tool] = (offloads[tool] ?? 0) + n;
    };
    for (const run of runs.slice(0, -1)) {
      const part = await calls.guard("saving the session state", () =>
        sessions.addRecords(ref, { records: run, lease: commit.lease }),
      );
      if (part.refused !== undefined) return null;
      standing.push(...part.records);
      count(part.offloads);
    }
    const result = await calls.guard("saving the session state", () =>
      sessions.commit(ref, { ...commit, records: runs[runs.length - 1] ?? [] }),
    );
    if (result.refused !== undefined) return null;
    standing.push(...result.records);
    count(result.offloads);
    this.#seq = result.seq;
    if (result.index_due)
      await calls.later(
        "the session index write",
        () => this.#p.index.putSession(ref, { session: ref.session, created_at: calls.now() }),
        "index",
        this.notes,
      );
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach
    // "never recalled".
    if (Object.keys(offloads).length > 0 && !commit.log.shadow)
      await this.#p.learn(
        ref.tenant,
        {
          tools: Object.fromEntries(
            Object.entries(offloads).map(([tool, n]) => [tool, { offloaded: n }]),
          ),
        },
        this.notes,
      );
    return standing;
  }

  async finish(finish: TurnFinish = {}): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    const memos = finish.memos ?? [];
    const write = async () => {
      const waiting = this.#waiting;
      this.#waiting = null;
      if (waiting !== null) {
        // Refused: the session was deleted since; there is nothing to log.
        if ((await this.#write({ ...waiting, finish })) === null) return;
      } else if (finish.proxy !== undefined || finish.usage !== undefined || memos.length > 0) {
        const seq = this.#seq;
        await this.#p.calls.guard("saving the turn's finish", () =>
          this.#p.sessions.finish(this.#ref, seq, finish),
        );
      } else return;
      if (finish.usage !== undefined) this.#teach(finish.usage);
    };
    // Only memos are read by the next request: the rest may follow the answer.
    const defer = this.#p.calls.defer;
    if (memos.length > 0 || defer === undefined) return write();
    defer(() =>
      write().catch(() => {
        // Logged by the guard; only this turn's line, note and usage are lost.
      }),
    );
  }

  /** The tenant's calibration learns the measured turn, in the background. */
  #teach(usage: TurnUsage): void {
    const sample = sampleOf(usage, this.#log?.estimate ?? null);
    if (sample !== null) void this.#p.learn(this.#ref.tenant, { samples: [sample] });
  }
}

function refusal(): OffloadError {
  return new OffloadError(
    "storage_error",
    "the session was deleted while this turn ran; its new results stay full",
  );
}

/**
 * Per model, the calibration a turn prices with: the session's own once it is ready (learned from
 * this very conversation), else the tenant's, else the session's unready one.
 */
export function calibrationsFor(
  session: Readonly<Record<string, Calibration>>,
  tenant: Readonly<Record<string, Calibration>>,
): Record<string, Calibration> {
  const out: Record<string, Calibration> = {};
  for (const model of new Set([...Object.keys(tenant), ...Object.keys(session)])) {
    const own = session[model];
    out[model] = calibrationReady(own) ? own : (tenant[model] ?? own!);
  }
  return out;
}
