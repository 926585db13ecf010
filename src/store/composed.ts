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
 *   internals.
 */
import type { OffloadConfigPatch } from "../config.ts";
import { MEM_ID_PATTERN } from "../core/memid.ts";
import type {
  CachedExtraction,
  CommitResult,
  ExtractionCache,
  LoadedState,
  ToolStats,
  TurnCommit,
} from "../core/ports.ts";
import type { IndexProblem, StatsProblem } from "../core/problems.ts";
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
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
  now?: () => number;
  /** Where backend failures are reported for operators (never bodies or keys). */
  log?: (line: string) => void;
}

export class ComposedStore implements ServiceStore {
  readonly notes: (IndexProblem | StatsProblem)[] = [];
  lastTurnSeq: number | null = null;
  readonly #parts: StoreParts;
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
  }

  forCall(): ComposedStore {
    return new ComposedStore(this.#parts);
  }

  async #guard<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (cause) {
      if (isOffloadError(cause) && cause.type !== "internal") throw cause;
      this.#log(`[edge-offload] ${what} failed: ${describe(cause)}`);
      throw new OffloadError("storage_error", `${what} failed`, { cause });
    }
  }

  /** Best effort: an index write that fails is noted, and nothing depends on it having happened. */
  async #soft(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code: "index_error" | "stats_error" = "index_error",
  ): Promise<void> {
    try {
      await run();
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

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<LoadedState> {
    const [state, tenant] = await Promise.all([
      this.#guard("reading the session state", () =>
        this.#sessions.load(ref, toolUseIds, toolNames),
      ),
      this.#tenantStats(ref.tenant, toolNames),
    ]);
    return {
      records: new Map(state.records.map((r) => [r.tool_use_id, r])),
      recall_declared: state.recall_declared,
      tool_stats: tenant,
      session_tool_stats: state.session_tool_stats,
      gap_seconds: state.gap_seconds,
      idle_seconds: state.idle_seconds ?? null,
    };
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
    const result = await this.#guard("saving the session state", () =>
      this.#sessions.commit(ref, commit),
    );
    this.lastTurnSeq = result.turn_seq;
    if (result.index_due)
      await this.#soft("the session index write", () =>
        this.#index.putSession(ref, { session: ref.session, created_at: this.#now() }),
      );
    const offloads = Object.entries(result.offloads ?? {});
    // A shadow turn's offloads were never shown to the model as stubs: they would only teach "never
    // recalled".
    if (this.#tenants !== undefined && offloads.length > 0 && !commit.log.shadow) {
      const tenants = this.#tenants;
      await this.#soft(
        "the tenant statistics write",
        () =>
          tenants.add(
            ref.tenant,
            Object.fromEntries(offloads.map(([tool, n]) => [tool, { offloaded: n }])),
          ),
        undefined,
        "stats_error",
      );
    }
    return { records: new Map(result.records.map((r) => [r.tool_use_id, r])) };
  }

  async putBody(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    await this.#guard("the ledger write", () => this.#ledger.put(ref, body, meta));
    await this.#soft(
      "the mem_id index write",
      () => this.#index.putBody(ref, { location: ledgerKey(ref, meta.mem_id), meta }),
      meta.mem_id,
    );
  }

  async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    // Recall reads the ledger directly: it is strongly consistent, and the key follows from the
    // scope.
    if (!MEM_ID_PATTERN.test(memId)) return null;
    return this.#guard("the ledger read", () => this.#ledger.get(ref, memId));
  }

  async hasBody(ref: SessionRef, memId: string): Promise<boolean> {
    if (!MEM_ID_PATTERN.test(memId)) return false;
    return (await this.#guard("the ledger read", () => this.#ledger.head(ref, memId))) !== null;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<void> {
    const tool = await this.#guard("counting the recall", () =>
      this.#sessions.noteRecall(ref, memId),
    );
    if (tool !== null && this.#tenants !== undefined) {
      const tenants = this.#tenants;
      await this.#soft(
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
    await this.#guard("deleting the session's bodies", () =>
      purgeBodies(ref, named, this.#ledger, this.#index),
    );
  }

  /** A cached extraction of the tenant, or null (also when this store has no cache). */
  async getExtraction(tenant: string, key: string): Promise<CachedExtraction | null> {
    const cache = this.#extractions;
    if (cache === undefined) return null;
    return this.#guard("reading the extraction cache", () => cache.getExtraction(tenant, key));
  }

  async putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void> {
    const cache = this.#extractions;
    if (cache === undefined) return;
    await this.#guard("writing the extraction cache", () =>
      cache.putExtraction(tenant, key, value),
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

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    await this.#guard("saving the proxy's turn", () => this.#sessions.finishProxyTurn(ref, turn));
  }

  /**
   * Metadata of a body: the index when it has the entry, else the ledger (a miss or an index
   * failure).
   */
  async statBody(ref: SessionRef, memId: string): Promise<BodyInfo | null> {
    if (!MEM_ID_PATTERN.test(memId)) return null;
    try {
      const hit = await this.#index.getBody(ref, memId);
      if (hit !== null && hit.meta.mem_id === memId) return { meta: hit.meta, source: "index" };
    } catch (cause) {
      this.#log(`[edge-offload] the mem_id index read failed: ${describe(cause)}`);
    }
    const meta = await this.#guard("the ledger read", () => this.#ledger.head(ref, memId));
    return meta === null ? null : { meta, source: "ledger" };
  }

  /** The tenant's sessions as the index knows them (may lag a new session by about a minute). */
  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    return this.#guard("listing sessions", () => this.#index.listSessions(tenant, options));
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

function describe(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message.slice(0, 200)}` : "unknown error";
}
