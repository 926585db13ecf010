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
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import { MEM_ID_PATTERN } from "../core/memid.ts";
import type {
  CachedExtraction,
  CommitResult,
  ExtractionCache,
  LoadedState,
  TurnCommit,
} from "../core/ports.ts";
import type { IndexProblem, StatsProblem } from "../core/problems.ts";
import { checkRef } from "../core/session.ts";
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
import type { TurnKey, UsageOutcome } from "../session/usage.ts";
import { BackendCalls, describeCause, type StoreParts } from "./backend-calls.ts";
import { ledgerKey } from "./keys.ts";
import type {
  BodyInfo,
  BodyLedgerPort,
  IndexedSession,
  IndexPort,
  ServiceStore,
  SessionDetail,
  SessionReportData,
  SessionStatePort,
  TenantStatsPort,
} from "./ports.ts";
import { purgeBodies } from "./purge.ts";
import { type StoreTimeouts, withTimeout } from "./timeout.ts";
import { type HeldLease, TurnBegin } from "./turn-begin.ts";
import { TurnCommits } from "./turn-commit.ts";
import { type BeginAsk, PUT_DEADLINE_MS, type TurnStart } from "./turn-protocol.ts";
import { UsageCalibration } from "./usage-calibration.ts";

export type { StoreParts } from "./backend-calls.ts";
export { purgeBodies } from "./purge.ts";

export class ComposedStore implements ServiceStore {
  readonly notes: (IndexProblem | StatsProblem)[];
  readonly #parts: StoreParts;
  readonly #calls: BackendCalls;
  readonly #begin: TurnBegin;
  readonly #commits: TurnCommits;
  readonly #usage: UsageCalibration;
  readonly #sessions: SessionStatePort;
  readonly #ledger: BodyLedgerPort;
  readonly #index: IndexPort;
  readonly #tenants: TenantStatsPort | undefined;
  readonly #extractions: ExtractionCache | undefined;
  readonly #now: () => number;
  readonly #log: (line: string) => void;

  constructor(parts: StoreParts) {
    this.#parts = parts;
    this.#calls = new BackendCalls(parts);
    this.notes = this.#calls.notes;
    this.#begin = new TurnBegin(this.#calls, this);
    this.#commits = new TurnCommits(this.#calls);
    this.#usage = new UsageCalibration(this.#calls, this.#commits);
    this.#sessions = parts.sessions;
    this.#ledger = parts.ledger;
    this.#index = parts.index;
    this.#tenants = parts.tenants;
    this.#extractions = parts.extractions;
    this.#now = this.#calls.now;
    this.#log = this.#calls.log;
  }

  /** The log line this call's commit wrote (the proxy notes its hops on it). */
  get lastTurnSeq(): number | null {
    return this.#commits.lastTurnSeq;
  }

  forCall(): ComposedStore {
    return new ComposedStore(this.#parts);
  }

  #guard<T>(what: string, run: () => Promise<T>, backend?: keyof StoreTimeouts): Promise<T> {
    return this.#calls.guard(what, run, backend);
  }

  #later(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code?: "index_error" | "stats_error",
  ): Promise<void> {
    return this.#calls.later(what, run, memId, code);
  }

  /**
   * A turn's first read: the session's config layer, the records of `ask.ids` and the proxy's
   * memos anchored on `ask.anchors`, in one round trip where the session state offers `begin`
   * (else its config, its memos and a load, at once). The turn's `load` is then served from here.
   */
  begin(ref: SessionRef, ask: BeginAsk): Promise<TurnStart> {
    return this.#begin.begin(ref, ask);
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<LoadedState> {
    const loaded = await this.#begin.load(ref, toolUseIds, toolNames);
    this.#commits.declared = loaded.recall_declared;
    return loaded;
  }

  commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult> {
    return this.#commits.commit(ref, commit);
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
    checkRef(ref);
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
    checkRef(ref);
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
    checkRef(ref);
    return this.#guard("reading the session config", () => this.#sessions.getConfig(ref));
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    checkRef(ref);
    await this.#guard("saving the session config", () => this.#sessions.setConfig(ref, patch));
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    return this.#guard("reading the session state", () => this.#sessions.proxyState(ref));
  }

  /**
   * Only memos are read by the next request: a turn without any (its hops, its usage) is written
   * after the answer where the caller can keep work alive, so no provider answer waits for it.
   */
  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    return this.#usage.finishProxyTurn(ref, turn);
  }

  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    return this.#usage.recordUsage(ref, key, usage);
  }

  /** The tenant's calibration (null without a calibration store, or when it cannot be read). */
  calibration(ref: SessionRef, model: string): Promise<Calibration | null> {
    return this.#usage.calibration(ref, model);
  }

  calibrations(tenant: string): Promise<Record<string, Calibration>> {
    return this.#usage.calibrations(tenant);
  }

  /**
   * Metadata of a body: the index when it has the entry, else the ledger (a miss or an index
   * failure).
   */
  async statBody(ref: SessionRef, memId: string): Promise<BodyInfo | null> {
    if (!MEM_ID_PATTERN.test(memId)) return null;
    try {
      const hit = await withTimeout(
        () => this.#index.getBody(ref, memId),
        this.#calls.timeouts.index,
      );
      if (hit !== null && hit.meta.mem_id === memId) return { meta: hit.meta, source: "index" };
    } catch (cause) {
      this.#log(`[edge-offload] the mem_id index read failed: ${describeCause(cause)}`);
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
