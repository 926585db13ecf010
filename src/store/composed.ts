/**
 * A store composed of the backend ports (ports.ts): the core's `OffloadStore` plus what the routes
 * need (`ServiceStore`). The Worker composes the SessionDO, R2 and KV (app.ts); `MemoryStore` the
 * in-memory twins; `AgentStore` a Cloudflare Agent's own SQLite: all follow the same rules.
 *
 * - A turn begins with one call to the session state (turn.ts has the rest of its life); the
 *   tenant's learning comes from the isolate's cache (a `TenantCache`, refreshed in the background)
 *   or, in one process, straight from the port.
 * - Bodies go to the ledger only; the session state gets small records.
 * - The index is written best effort after the durable write and read only where a miss can fall
 *   back (KV is eventually consistent); so is the tenant's learning. Their failures are notes,
 *   never a lost result.
 * - Every backend call is bounded in time, and every failure that matters is one `storage_error`
 *   naming what failed (backend-calls.ts).
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import { MEM_ID_PATTERN } from "../core/memid.ts";
import type { CachedExtraction, ExtractionCache, Turn, TurnAsk } from "../core/ports.ts";
import type { Problem } from "../core/problems.ts";
import { checkRef } from "../core/session.ts";
import type { SessionRef, StoredBody } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import {
  BackendCalls,
  type CallOptions,
  describeCause,
  nextTick,
  withTimeout,
} from "./backend-calls.ts";
import type {
  BodyInfo,
  BodyLedgerPort,
  IndexedSession,
  IndexPort,
  ServiceStore,
  SessionDetail,
  SessionReportData,
  SessionState,
  TenantAggregate,
  TenantDelta,
  TenantLearning,
  TurnKey,
  UsageOutcome,
} from "./ports.ts";
import { purgeBodies } from "./purge.ts";
import { EMPTY_AGGREGATE, TenantCache } from "./tenant-cache.ts";
import { StoreTurn, type TurnParts } from "./turn.ts";
import { sampleOf } from "./usage.ts";

export interface StoreParts extends CallOptions {
  sessions: SessionState;
  ledger: BodyLedgerPort;
  index: IndexPort;
  /**
   * The tenant's learning: a `TenantCache` where it lives elsewhere (read from the isolate's
   * cache, never waited for), or a port read directly where it is in the process. Without it the
   * gate learns from each session alone.
   */
  tenants?: TenantLearning | TenantCache | undefined;
  /** The tenant's extraction cache (attachments); without it every extraction runs. */
  extractions?: ExtractionCache | undefined;
}

/**
 * The core's `OffloadStore` and the routes' `ServiceStore` over the backend ports: one turn handle, one set
 * of rules, every backend call bounded in time.
 */
export class ComposedStore implements ServiceStore {
  readonly #calls: BackendCalls;
  readonly #sessions: SessionState;
  readonly #ledger: BodyLedgerPort;
  readonly #index: IndexPort;
  readonly #tenants: TenantLearning | TenantCache | undefined;
  readonly #extractions: ExtractionCache | undefined;
  readonly #turnParts: TurnParts;

  constructor(parts: StoreParts) {
    this.#calls = new BackendCalls(parts);
    this.#sessions = parts.sessions;
    this.#ledger = parts.ledger;
    this.#index = parts.index;
    this.#tenants = parts.tenants;
    this.#extractions = parts.extractions;
    this.#turnParts = {
      calls: this.#calls,
      sessions: parts.sessions,
      ledger: parts.ledger,
      index: parts.index,
      extractions: parts.extractions,
      learn: (tenant, delta, notes) => this.#learn(tenant, delta, notes),
    };
  }

  async beginTurn(ref: SessionRef, ask: TurnAsk): Promise<Turn> {
    const notes: Problem[] = [];
    const [start, tenant] = await Promise.all([
      this.#calls.guard("reading the session state", () => this.#sessions.begin(ref, ask)),
      this.#tenantRead(ref.tenant, notes),
    ]);
    if (start.lease === null)
      throw new OffloadError(
        "storage_error",
        "the session is being deleted; the request passes through until that is done",
      );
    return new StoreTurn(this.#turnParts, ref, ask, start, tenant, notes);
  }

  /** The tenant's learning for a turn: cached (refreshed in the background), or read here. */
  async #tenantRead(tenant: string, notes: Problem[]): Promise<TenantAggregate> {
    const port = this.#tenants;
    if (port === undefined) return EMPTY_AGGREGATE;
    if (port instanceof TenantCache) {
      const { value, refresh } = port.peek(tenant);
      if (refresh !== null)
        void this.#calls.later("reading the tenant's learning", () => refresh, "tenants");
      return value;
    }
    // Read directly (a port in the process), but never waited for beyond the next tick: a port
    // that is slow or hangs leaves the turn to learn from its session alone.
    let value = EMPTY_AGGREGATE;
    let waited = true;
    const late: Problem[] = [];
    const read = this.#calls
      .soft(
        "reading the tenant's learning",
        async () => {
          const got = await port.read(tenant);
          if (waited) value = got;
        },
        "tenants",
        late,
      )
      .then(() => {
        if (waited) notes.push(...late);
      });
    this.#calls.track(read);
    await Promise.race([read, nextTick()]);
    waited = false;
    return value;
  }

  /** Adds to the tenant's learning, after the answer where the runtime allows. */
  #learn(tenant: string, delta: TenantDelta, notes?: Problem[]): Promise<void> {
    const port = this.#tenants;
    if (port === undefined) return Promise.resolve();
    return this.#calls.later(
      "the tenant's learning write",
      () => port.add(tenant, delta),
      "tenants",
      notes,
    );
  }

  /**
   * Resolves once the best-effort work of earlier calls (index entries, the tenant's learning),
   * which no turn waits for, is done: before a process exits, or a test reads it back.
   */
  settled(): Promise<void> {
    return this.#calls.settled();
  }

  async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    // Recall reads the ledger directly: it is strongly consistent, and the key follows from the
    // scope.
    if (!MEM_ID_PATTERN.test(memId)) return null;
    return this.#calls.guard("the ledger read", () => this.#ledger.get(ref, memId), "ledger");
  }

  async hasBody(ref: SessionRef, memId: string): Promise<boolean> {
    if (!MEM_ID_PATTERN.test(memId)) return false;
    const meta = await this.#calls.guard(
      "the ledger read",
      () => this.#ledger.head(ref, memId),
      "ledger",
    );
    return meta !== null;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<void> {
    const tool = await this.#calls.guard("counting the recall", () =>
      this.#sessions.noteRecall(ref, memId),
    );
    if (tool !== null) await this.#learn(ref.tenant, { tools: { [tool]: { recalls: 1 } } });
  }

  async describeSession(ref: SessionRef): Promise<SessionDetail | null> {
    checkRef(ref);
    return this.#calls.guard("reading the session state", () => this.#sessions.describe(ref));
  }

  sessionReport(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    return this.#calls.guard("reading the session report", () =>
      this.#sessions.report(ref, options),
    );
  }

  /**
   * Session state first (the authority: afterwards the session reads as unknown and no record names
   * a missing body), then its bodies and index entries, then the session may be written again. A
   * deleted session has ended: its length is counted first (best effort).
   */
  async deleteSession(ref: SessionRef): Promise<void> {
    checkRef(ref);
    await this.#end(ref, false);
    const named = await this.#calls.guard("deleting the session state", () =>
      this.#sessions.destroy(ref),
    );
    // The purge lists and deletes in many calls: bounded as a whole by the ledger's timeout.
    await this.#calls.guard(
      "deleting the session's bodies",
      () => purgeBodies(ref, named, this.#ledger, this.#index),
      "ledger",
    );
    await this.#calls.guard("deleting the session state", () => this.#sessions.purged(ref));
  }

  /**
   * Ends the session if it has been idle for SESSION_END_MS (session-lengths.ts): its length is
   * added to the tenant's learning, once. What a host that holds many sessions runs on its own
   * schedule, for each of `SqlSessionState.ended()` (the SessionDO's alarm does it by itself).
   */
  async endSession(ref: SessionRef): Promise<void> {
    await this.#end(ref, true);
  }

  async #end(ref: SessionRef, idle: boolean): Promise<void> {
    let calls: number | null;
    try {
      calls = await this.#calls.guard("ending the session", () =>
        this.#sessions.end(ref, { idle }),
      );
    } catch {
      return; // logged by the guard: only the tenant's learning misses this session
    }
    if (calls !== null) await this.#learn(ref.tenant, { ended: [calls] });
  }

  /** A cached extraction of the tenant, or null (also when this store has no cache). */
  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const cache = this.#extractions;
    if (cache === undefined) return null;
    return this.#calls.guard(
      "reading the extraction cache",
      () => cache.getExtraction(tenant, key),
      "ledger",
    );
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const cache = this.#extractions;
    if (cache === undefined) return;
    await this.#calls.guard(
      "writing the extraction cache",
      () => cache.putExtraction(tenant, key, value),
      "ledger",
    );
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    checkRef(ref);
    return this.#calls.guard("reading the session config", () => this.#sessions.getConfig(ref));
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    checkRef(ref);
    await this.#calls.guard("saving the session config", () =>
      this.#sessions.setConfig(ref, patch),
    );
  }

  /**
   * The usage is written in the session's transaction before this answers: what is answered
   * `recorded` is durable. The tenant's calibration learns it in the background.
   */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const outcome = await this.#calls.guard("saving the turn's usage", () =>
      this.#sessions.recordUsage(ref, key, usage),
    );
    if (outcome?.status === "recorded") {
      const sample = sampleOf(usage, outcome.estimate);
      if (sample !== null) await this.#learn(ref.tenant, { samples: [sample] });
    }
    return outcome;
  }

  /** The tenant's calibration per model, read afresh ({} for a store that learns none). */
  async calibrations(tenant: string): Promise<Record<string, Calibration>> {
    const port = this.#tenants;
    if (port === undefined) return {};
    return (await this.#calls.guard("reading the calibration", () => port.read(tenant), "tenants"))
      .calibrations;
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
      this.#calls.log(`[edge-offload] the mem_id index read failed: ${describeCause(cause)}`);
    }
    const meta = await this.#calls.guard(
      "the ledger read",
      () => this.#ledger.head(ref, memId),
      "ledger",
    );
    return meta === null ? null : { meta, source: "ledger" };
  }

  /** The tenant's sessions as the index knows them (may lag a new session by about a minute). */
  listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    return this.#calls.guard(
      "listing sessions",
      () => this.#index.listSessions(tenant, options),
      "index",
    );
  }
}
