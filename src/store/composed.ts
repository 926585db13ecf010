/**
 * A store composed of the backend ports (ports.ts): the core's `OffloadStore` plus what the routes
 * and the proxy need (`ServiceStore`). The Worker composes the real bindings (app.ts);
 * `MemoryStore` composes the in-memory twins, so both follow the same rules (first writer wins, the
 * shadow rule for the tenant's statistics, retention and purges of the session state).
 *
 * - Bodies go to the ledger only; the session state gets small records (heavy bodies never reach
 *   the DO).
 * - The index is written best effort after the durable write and read only where a miss can fall
 *   back (KV is eventually consistent); its failures become notes for the call's summary, never a
 *   lost result.
 * - Every failure of a backend surfaces as one `storage_error` naming what failed, without
 *   internals; every call is bounded in time (timeout.ts), so a backend that hangs is a failure too.
 * - A turn's protocol (turn-protocol.ts), where the session state offers it: `begin` reads the
 *   config, the records and the memos in one round trip and `load` is then served from it; the
 *   turn's lease goes with every ledger write and the commit; a large commit goes in batches under
 *   the RPC budget; a commit with nothing new to save (a steady turn) is handed to `defer` when the
 *   caller gives one, so the answer does not wait for the turn's log line.
 */
import type { OffloadConfigPatch } from "../config.ts";
import { promptOf, type TurnUsage } from "../core/billing.ts";
import { type Calibration, calibratedTokens, calibrationReady } from "../core/calibration.ts";
import { MEM_ID_PATTERN } from "../core/memid.ts";
import type {
  CachedExtraction,
  CommitResult,
  ExtractionCache,
  LoadedState,
  ToolStats,
  TurnCommit,
} from "../core/ports.ts";
import { resolveModel } from "../core/pricing.ts";
import type { IndexProblem, StatsProblem } from "../core/problems.ts";
import type {
  BodyMeta,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnEstimate,
} from "../core/types.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import type { ProxyMemo, ProxyState, ProxyTurn } from "../proxy/port.ts";
import { anchoredMemos } from "../session/memos.ts";
import { LAST_DECISIONS_LIMIT } from "../session/report.ts";
import type { TurnKey, UsageOutcome } from "../session/usage.ts";
import { ledgerKey } from "./keys.ts";
import type {
  BodyInfo,
  BodyLedgerPort,
  CalibrationPort,
  IndexedSession,
  IndexPort,
  ServiceStore,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
  TenantStatsPort,
} from "./ports.ts";
import { DEFAULT_TIMEOUTS, type StoreTimeouts, withTimeout } from "./timeout.ts";
import {
  type BeginAsk,
  batches,
  PUT_DEADLINE_MS,
  RPC_BUDGET_BYTES,
  sizeOf,
  type TurnLease,
  type TurnStart,
} from "./turn-protocol.ts";

export interface StoreParts {
  sessions: SessionStatePort;
  ledger: BodyLedgerPort;
  index: IndexPort;
  /**
   * The tenant's learning statistics (adaptive gate); without it the gate learns from the session
   * alone.
   */
  tenants?: TenantStatsPort | undefined;
  /** The tenant's extraction cache (attachments); without it every extraction runs. */
  extractions?: ExtractionCache | undefined;
  /**
   * The estimates' calibration per tenant and model; without it measured usage is kept but nothing
   * is calibrated.
   */
  calibration?: CalibrationPort | undefined;
  now?: () => number;
  /** Where backend failures are reported for operators (never bodies or keys). */
  log?: (line: string) => void;
  /** Bounds on each backend's calls (default: DEFAULT_TIMEOUTS). */
  timeouts?: Partial<StoreTimeouts> | undefined;
  /**
   * Runs work that the answer need not wait for, kept alive after it is sent (the Worker's
   * `waitUntil`): a steady turn's log line, the lookup index's writes. Without it, all is awaited.
   */
  defer?: ((work: () => Promise<unknown>) => void) | undefined;
}

/** The lease as this store hands it to the core: the session's, and when it was received here. */
interface HeldLease extends TurnLease {
  received: number;
}

/** A begin's answer, kept for the turn's `load`. */
interface Prefetch {
  key: string;
  covered: Set<string>;
  names: Set<string>;
  state: SessionLoad;
}

export class ComposedStore implements ServiceStore {
  readonly notes: (IndexProblem | StatsProblem)[] = [];
  lastTurnSeq: number | null = null;
  readonly #parts: StoreParts;
  readonly #timeouts: StoreTimeouts;
  #prefetch: Prefetch | null = null;
  /** This call's view of recall_declared (a commit that would only repeat it is a steady one). */
  #declared = false;
  /** A steady turn's commit, deferred: starts it (or joins it) and resolves once it is written. */
  #pendingLog: (() => Promise<void>) | null = null;
  readonly #sessions: SessionStatePort;
  readonly #ledger: BodyLedgerPort;
  readonly #index: IndexPort;
  readonly #tenants: TenantStatsPort | undefined;
  readonly #extractions: ExtractionCache | undefined;
  readonly #now: () => number;
  readonly #log: (line: string) => void;

  constructor(parts: StoreParts) {
    this.#parts = parts;
    this.#sessions = parts.sessions;
    this.#ledger = parts.ledger;
    this.#index = parts.index;
    this.#tenants = parts.tenants;
    this.#extractions = parts.extractions;
    this.#now = parts.now ?? Date.now;
    this.#log = parts.log ?? ((line) => console.error(line));
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...parts.timeouts };
  }

  forCall(): ComposedStore {
    return new ComposedStore(this.#parts);
  }

  async #guard<T>(
    what: string,
    run: () => Promise<T>,
    backend: keyof StoreTimeouts = "session",
  ): Promise<T> {
    try {
      return await withTimeout(run, this.#timeouts[backend]);
    } catch (cause) {
      if (isOffloadError(cause) && cause.type !== "internal") throw cause;
      this.#log(`[edge-offload] ${what} failed: ${describe(cause)}`);
      throw new OffloadError("storage_error", `${what} failed`, { cause });
    }
  }

  /**
   * A best-effort write the answer need not wait for: deferred when the caller can keep work alive
   * after the answer (its failure is then only logged), else done now and noted.
   */
  async #later(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code: "index_error" | "stats_error" = "index_error",
  ): Promise<void> {
    const defer = this.#parts.defer;
    if (defer === undefined) return this.#soft(what, run, memId, code);
    defer(() => this.#soft(what, run, memId, code));
  }

  /** Best effort: an index write that fails is noted, and nothing depends on it having happened. */
  async #soft(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code: "index_error" | "stats_error" = "index_error",
  ): Promise<void> {
    try {
      await withTimeout(run, this.#timeouts[code === "index_error" ? "index" : "tenants"]);
    } catch (cause) {
      this.#log(`[edge-offload] ${what} failed: ${describe(cause)}`);
      const why =
        code === "index_error"
          ? "the result is safe; lookups fall back to the ledger"
          : "only the gate's learning is slowed";
      this.notes.push({
        code,
        message: `${what} failed (${why})`,
        ...(memId === undefined ? {} : { mem_id: memId }),
      });
    }
  }

  /**
   * A turn's first read: the session's config layer, the records of `ask.ids` and the proxy's
   * memos anchored on `ask.anchors`, in one round trip where the session state offers `begin`
   * (else its config, its memos and a load, at once). The turn's `load` is then served from here.
   */
  async begin(ref: SessionRef, ask: BeginAsk): Promise<TurnStart> {
    const sessions = this.#sessions;
    if (sessions.begin === undefined) {
      const [proxy, state] = await Promise.all([
        ask.anchors === undefined
          ? this.getConfig(ref).then((config) => ({ config, memos: [] as ProxyMemo[] }))
          : this.proxyState(ref),
        ask.ids === null ? null : this.#loadAll(ref, ask.ids, ask.names),
      ]);
      const memos = anchoredMemos(proxy.memos, ask.anchors);
      if (state !== null) this.#hold(ref, [...ask.ids!], ask.names, state);
      return { config: proxy.config, memos };
    }
    const begun = await this.#guard("reading the session state", () => sessions.begin!(ref, ask));
    if (begun.state !== null) {
      const looked = [...ask.ids!, ...begun.memos.flatMap((m) => m.calls.map((c) => c.id))];
      this.#hold(ref, looked.slice(0, begun.state.answered), ask.names, begun.state);
    }
    return { config: begun.config, memos: begun.memos };
  }

  #hold(ref: SessionRef, covered: string[], names: readonly string[], state: SessionLoad): void {
    this.#prefetch = {
      key: scopeKey(ref),
      covered: new Set(covered),
      names: new Set(names),
      state,
    };
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<LoadedState> {
    const pre = this.#prefetch;
    this.#prefetch = null;
    let state: SessionLoad;
    if (
      pre !== null &&
      pre.key === scopeKey(ref) &&
      toolNames.every((n) => pre.names.has(n)) &&
      pre.state.lease !== null
    ) {
      const missing = toolUseIds.filter((id) => !pre.covered.has(id));
      const more = missing.length === 0 ? null : await this.#loadAll(ref, missing, []);
      state = { ...pre.state, records: [...pre.state.records, ...(more?.records ?? [])] };
    } else state = await this.#loadAll(ref, toolUseIds, toolNames);
    if (state.lease === null)
      throw new OffloadError(
        "storage_error",
        "the session is being deleted; the request passes through until that is done",
      );
    const tenant =
      state.tool_stats !== undefined
        ? state.tool_stats
        : await this.#tenantStats(ref.tenant, toolNames);
    this.#declared = state.recall_declared;
    return {
      records: new Map(state.records.map((r) => [r.tool_use_id, r])),
      recall_declared: state.recall_declared,
      tool_stats: tenant,
      session_tool_stats: state.session_tool_stats,
      gap_seconds: state.gap_seconds,
      idle_seconds: state.idle_seconds ?? null,
      ...(state.calibrations === undefined ? {} : { calibrations: state.calibrations }),
      ...(state.lease === undefined
        ? {}
        : { lease: { ...state.lease, received: this.#now() } satisfies HeldLease }),
    };
  }

  /**
   * The session state's records for any number of ids: ids sent in runs under the RPC budget, and
   * each run asked again from where an answer stopped at its own budget.
   */
  async #loadAll(
    ref: SessionRef,
    ids: readonly string[],
    names: readonly string[],
  ): Promise<SessionLoad> {
    const runs = batches(ids, RPC_BUDGET_BYTES / 2);
    let first: SessionLoad | null = null;
    const records: SessionLoad["records"] = [];
    for (let run of runs.length === 0 ? [[]] : runs) {
      for (;;) {
        const part = await this.#guard("reading the session state", () =>
          this.#sessions.load(ref, run, first === null ? names : []),
        );
        first ??= part;
        records.push(...part.records);
        const answered = part.answered ?? run.length;
        if (answered >= run.length || answered <= 0) break;
        run = run.slice(answered);
      }
    }
    return { ...first!, records };
  }

  /**
   * Learning statistics are best effort: unreadable, the gate learns from the session's own counts.
   */
  async #tenantStats(
    tenant: string,
    toolNames: readonly string[],
  ): Promise<Record<string, ToolStats>> {
    if (this.#tenants === undefined || toolNames.length === 0) return {};
    try {
      return await this.#tenants.load(tenant, toolNames);
    } catch (cause) {
      this.#log(`[edge-offload] reading the tenant statistics failed: ${describe(cause)}`);
      this.notes.push({
        code: "stats_error",
        message: "the tenant's learning statistics could not be read",
      });
      return {};
    }
  }

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
    const steady = commit.records.length === 0 && (this.#declared || !commit.recall_declared);
    const defer = this.#parts.defer;
    if (steady && defer !== undefined) {
      // The line is written after the answer; the proxy joins it before noting its hops.
      let write: Promise<void> | null = null;
      const once = () =>
        (write ??= this.#save(ref, sent).then(
          () => {},
          () => {},
        ));
      this.#pendingLog = once;
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
    const sessions = this.#sessions;
    const runs =
      sessions.addRecords === undefined || sizeOf(commit.records) <= RPC_BUDGET_BYTES
        ? [commit.records]
        : batches(commit.records, RPC_BUDGET_BYTES);
    const standing: ResultRecord[] = [];
    const offloads: Record<string, number> = {};
    const lease = commit.lease as TurnLease | undefined;
    for (const run of runs.slice(0, -1)) {
      const part = await this.#guard("saving the session state", () =>
        sessions.addRecords!(ref, { records: run, lease, shadow: commit.log.shadow }),
      );
      if (part.refused !== undefined) throw refusal();
      standing.push(...part.records);
      for (const [tool, n] of Object.entries(part.offloads))
        offloads[tool] = (offloads[tool] ?? 0) + n;
    }
    const result = await this.#guard("saving the session state", () =>
      this.#sessions.commit(ref, { ...commit, records: runs[runs.length - 1] ?? [] }),
    );
    if (result.refused !== undefined) throw refusal();
    standing.push(...result.records);
    for (const [tool, n] of Object.entries(result.offloads ?? {}))
      offloads[tool] = (offloads[tool] ?? 0) + n;
    this.lastTurnSeq = result.turn_seq;
    if (commit.recall_declared) this.#declared = true;
    if (result.index_due)
      await this.#later("the session index write", () =>
        this.#index.putSession(ref, { session: ref.session, created_at: this.#now() }),
      );
    const learned = Object.entries(offloads);
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach "never
    // recalled".
    if (this.#tenants !== undefined && learned.length > 0 && !commit.log.shadow) {
      const tenants = this.#tenants;
      await this.#later(
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

  async putBody(ref: SessionRef, body: string, meta: BodyMeta, lease?: unknown): Promise<void> {
    const held = lease as HeldLease | undefined;
    // A write started this late might land after the sweep a lease after a delete: not started.
    if (held !== undefined && this.#now() - held.received > PUT_DEADLINE_MS)
      throw new OffloadError("storage_error", "the turn ran too long to store more bodies");
    await this.#guard("the ledger write", () => this.#ledger.put(ref, body, meta), "ledger");
    await this.#later(
      "the mem_id index write",
      () => this.#index.putBody(ref, { location: ledgerKey(ref, meta.mem_id), meta }),
      meta.mem_id,
    );
  }

  async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    // Recall reads the ledger directly: it is strongly consistent, and the key follows from the
    // scope.
    if (!MEM_ID_PATTERN.test(memId)) return null;
    return this.#guard("the ledger read", () => this.#ledger.get(ref, memId), "ledger");
  }

  async hasBody(ref: SessionRef, memId: string): Promise<boolean> {
    if (!MEM_ID_PATTERN.test(memId)) return false;
    return (
      (await this.#guard("the ledger read", () => this.#ledger.head(ref, memId), "ledger")) !== null
    );
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<void> {
    const tool = await this.#guard("counting the recall", () =>
      this.#sessions.noteRecall(ref, memId),
    );
    if (tool !== null && this.#tenants !== undefined) {
      const tenants = this.#tenants;
      await this.#later(
        "the tenant statistics write",
        () => tenants.add(ref.tenant, { [tool]: { recalls: 1 } }),
        undefined,
        "stats_error",
      );
    }
  }

  async describeSession(ref: SessionRef): Promise<SessionDetail | null> {
    return this.#guard("reading the session state", () => this.#sessions.describe(ref));
  }

  /** The savings report's data from the session state (null: unknown session). */
  async sessionReport(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    return this.#guard("reading the session report", () => this.#sessions.report(ref, options));
  }

  /**
   * Session state first (the authority: afterwards the session reads as unknown and no record names
   * a missing body).
   */
  async deleteSession(ref: SessionRef): Promise<void> {
    const named = await this.#guard("deleting the session state", () =>
      this.#sessions.destroy(ref),
    );
    // The purge lists and deletes in many calls: bounded as a whole by the ledger's timeout.
    await this.#guard(
      "deleting the session's bodies",
      () => purgeBodies(ref, named, this.#ledger, this.#index),
      "ledger",
    );
    const sessions = this.#sessions;
    if (sessions.purged !== undefined)
      await this.#guard("deleting the session state", () => sessions.purged!(ref));
  }

  /** A cached extraction of the tenant, or null (also when this store has no cache). */
  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const cache = this.#extractions;
    if (cache === undefined) return null;
    return this.#guard(
      "reading the extraction cache",
      () => cache.getExtraction(tenant, key),
      "ledger",
    );
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const cache = this.#extractions;
    if (cache === undefined) return;
    await this.#guard(
      "writing the extraction cache",
      () => cache.putExtraction(tenant, key, value),
      "ledger",
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    return this.#guard("reading the session config", () => this.#sessions.getConfig(ref));
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    await this.#guard("saving the session config", () => this.#sessions.setConfig(ref, patch));
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    return this.#guard("reading the session state", () => this.#sessions.proxyState(ref));
  }

  /**
   * Only memos are read by the next request: a turn without any (its hops, its usage) is written
   * after the answer where the caller can keep work alive, so no provider answer waits for it.
   */
  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    const defer = this.#parts.defer;
    if (turn.memos.length > 0 || defer === undefined) return this.#finishProxyTurn(ref, turn);
    defer(() =>
      this.#finishProxyTurn(ref, turn).catch(() => {
        // Logged by the guard; only this turn's note and usage are lost.
      }),
    );
  }

  async #finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    // A steady turn's line may still be on its way: the hops are noted on it once it is there.
    if (this.#pendingLog !== null) await this.#pendingLog();
    let line = { ...turn, turn_seq: turn.turn_seq ?? this.lastTurnSeq };
    if (line.turn_seq !== null && turn.usage !== undefined && turn.estimate !== undefined) {
      // Learned first, so the line keeps the removed tokens at the calibration this turn refined.
      const cal = await this.#learn(ref.tenant, turn.usage, turn.estimate);
      if (calibrationReady(cal))
        line = {
          ...line,
          usage: {
            ...turn.usage,
            removed_calibrated: calibratedTokens(cal, turn.estimate.removed),
          },
        };
    }
    await this.#guard("saving the proxy's turn", () => this.#sessions.finishProxyTurn(ref, line));
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const outcome = await this.#guard("saving the turn's usage", () =>
      this.#sessions.recordUsage(ref, key, usage),
    );
    if (outcome?.status === "recorded" && outcome.estimate !== null)
      await this.#learn(ref.tenant, usage, outcome.estimate);
    return outcome;
  }

  /** The tenant's calibration (null without a calibration store, or when it cannot be read). */
  async calibration(ref: SessionRef, model: string): Promise<Calibration | null> {
    const port = this.#parts.calibration;
    if (port === undefined) return null;
    try {
      return await port.get(ref.tenant, model);
    } catch (cause) {
      this.#log(`[edge-offload] reading the calibration failed: ${describe(cause)}`);
      return null;
    }
  }

  async calibrations(tenant: string): Promise<Record<string, Calibration>> {
    const port = this.#parts.calibration;
    if (port === undefined) return {};
    return this.#guard("reading the calibration", () => port.all(tenant));
  }

  /**
   * One measured turn calibrates the tenant's estimates for its model: the client's own call
   * against the request as sent (the hops' calls are requests we built, not estimated). Best
   * effort.
   */
  async #learn(
    tenant: string,
    usage: TurnUsage,
    estimate: TurnEstimate,
  ): Promise<Calibration | null> {
    const port = this.#parts.calibration;
    const model = resolveModel(usage.model ?? estimate.model)?.id;
    // A port without `learn` leaves learning to the session state (the SessionDO holds the
    // tenant's calibration and sends its samples in batches: tenant-copy.ts).
    if (port?.learn === undefined || model === undefined) return null;
    const learn = port.learn.bind(port);
    let out: Calibration | null = null;
    await this.#soft(
      "the calibration write",
      async () => {
        out = await learn(tenant, model, estimate.sent, promptOf(usage.first));
      },
      undefined,
      "stats_error",
    );
    return out;
  }

  /**
   * Metadata of a body: the index when it has the entry, else the ledger (a miss or an index
   * failure).
   */
  async statBody(ref: SessionRef, memId: string): Promise<BodyInfo | null> {
    if (!MEM_ID_PATTERN.test(memId)) return null;
    try {
      const hit = await withTimeout(() => this.#index.getBody(ref, memId), this.#timeouts.index);
      if (hit !== null && hit.meta.mem_id === memId) return { meta: hit.meta, source: "index" };
    } catch (cause) {
      this.#log(`[edge-offload] the mem_id index read failed: ${describe(cause)}`);
    }
    const meta = await this.#guard(
      "the ledger read",
      () => this.#ledger.head(ref, memId),
      "ledger",
    );
    return meta === null ? null : { meta, source: "ledger" };
  }

  /** The tenant's sessions as the index knows them (may lag a new session by about a minute). */
  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    return this.#guard(
      "listing sessions",
      () => this.#index.listSessions(tenant, options),
      "index",
    );
  }
}

/** Bodies purged per step: their index entries go first, then the bodies themselves. */
const PURGE_BATCH = 100;

/**
 * Remove a session's bodies and index entries, a batch at a time: each batch's index entries, then
 * its bodies. A body's listing is what names its index entry, so it goes last; and a purge that
 * stops half way (a backend error, the per-invocation operation limit on a huge session) has made
 * progress that a repeat continues.
 */
export async function purgeBodies(
  ref: SessionRef,
  named: readonly string[],
  ledger: BodyLedgerPort,
  index: IndexPort,
): Promise<void> {
  const done = new Set<string>();
  for (;;) {
    const batch = await ledger.list(ref, PURGE_BATCH);
    if (batch.length === 0) break;
    if (batch.every((id) => done.has(id)))
      throw new OffloadError("internal", "the ledger did not delete a batch of bodies");
    await index.deleteBodies(ref, batch);
    await ledger.delete(ref, batch);
    for (const id of batch) done.add(id);
  }
  const rest = named.filter((id) => !done.has(id));
  if (rest.length > 0) await index.deleteBodies(ref, rest);
  await index.deleteSession(ref);
}

function refusal(): OffloadError {
  return new OffloadError(
    "storage_error",
    "the session was deleted while this turn ran; its new results stay full",
  );
}

function scopeKey(ref: SessionRef): string {
  return JSON.stringify([ref.tenant, ref.session]);
}

function describe(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message.slice(0, 200)}` : "unknown error";
}
