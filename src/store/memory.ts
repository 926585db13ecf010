/**
 * The library's default store: the in-memory twins of every backend (session state, ledger, index,
 * tenant learning, extraction cache) composed by the same class, under the same rules, as the
 * Worker's store. It is also what the contract suites are checked against first. Values are cloned
 * on the way in and out, as a serializing store would.
 */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ExtractionCache, ToolStats, Turn, TurnAsk } from "../core/ports.ts";
import type { SessionRef, StoredBody } from "../core/types.ts";
import type { CallOptions } from "./backend-calls.ts";
import { ComposedStore } from "./composed.ts";
import { MemoryExtractionCache } from "./memory-extractions.ts";
import { MemoryIndex } from "./memory-index.ts";
import { MemoryLedger } from "./memory-ledger.ts";
import { MemorySessionState } from "./memory-state.ts";
import type { TenantAggregate, TenantDelta, TenantLearning } from "./ports.ts";
import { endedBuckets, FORGOTTEN_WEIGHT, lengthsAddition, lengthsOf } from "./session-lengths.ts";

export interface MemoryStoreOptions {
  /** The clock of the session state (turn gaps, activity) and of the index (ms). */
  now?: () => number;
  /**
   * Where backend failures are reported (default: console.error); the twins do not fail on their
   * own.
   */
  log?: (line: string) => void;
  /** Sessions kept at most; the least recently used goes first (default 1,000; 0: no bound). */
  maxSessions?: number;
  /**
   * Bytes of bodies kept at most, counted as JavaScript holds them (2 per UTF-16 unit); the least
   * recently used sessions go first, the session being written last (default 256 MiB; 0: none).
   */
  maxBodyBytes?: number;
  /** A session unused this long is dropped (seconds; default 86,400, a day; 0: never). */
  idleSeconds?: number;
  /** Bounds of each backend call (the twins answer at once; a wrapped port may not). */
  timeouts?: CallOptions["timeouts"];
  /** The extraction cache (default: a MemoryExtractionCache, bounded in entries and bytes). */
  extractions?: ExtractionCache | undefined;
}

/** The defaults of the bounds (docs/stores.md). */
export const MEMORY_DEFAULTS = {
  maxSessions: 1_000,
  maxBodyBytes: 256 * 1024 * 1024,
  idleSeconds: 24 * 60 * 60,
} as const;

/** Why a session was dropped: a bound (the one named), or its idle time. */
type Cause = "max_sessions" | "max_body_bytes" | "idle";

/** Dropped sessions remembered (for a recall's answer), at most this many, oldest forgotten first. */
const DROPS_KEPT = 10_000;

/** A session's use, in least-recently-used order (a Map keeps insertion order). */
interface Use {
  ref: SessionRef;
  at: number;
  bytes: number;
}

const keyOf = (ref: SessionRef) => `${ref.tenant}/${ref.session}`;

/**
 * Everything in memory, for one process: tests, scripts, a Node service that keeps sessions for its
 * own lifetime. Calls running at once may share it. Bounded: at most `maxSessions` sessions and
 * `maxBodyBytes` of bodies, least recently used dropped first, and a session idle for `idleSeconds`
 * dropped; a recall of a dropped session's body answers that it was dropped, and why.
 *
 * @example
 * const store = new MemoryStore({ maxSessions: 200 });
 * const config = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
 * const out = await compact({ request, session: "chat-42", store, config });
 */
export class MemoryStore extends ComposedStore {
  readonly #sessions: MemorySessionState;
  readonly #uses = new Map<string, Use>();
  readonly #drops = new Map<string, Cause>();
  readonly #now: () => number;
  readonly #bounds: { maxSessions: number; maxBodyBytes: number; idleMs: number };
  #bytes = 0;

  constructor(options: MemoryStoreOptions = {}) {
    const now = options.now ?? Date.now;
    const ledger = new MemoryLedger();
    const sessions = new MemorySessionState({ now });
    super({
      sessions,
      ledger: {
        put: async (ref, body, meta) => {
          const before = await sizeIn(ledger, ref, meta.mem_id);
          await ledger.put(ref, body, meta);
          await this.#added(ref, body.length * 2 - before);
        },
        get: (ref, id) => ledger.get(ref, id),
        head: (ref, id) => ledger.head(ref, id),
        list: (ref, limit) => ledger.list(ref, limit),
        delete: async (ref, ids) => {
          let freed = 0;
          for (const id of ids) freed += await sizeIn(ledger, ref, id);
          await ledger.delete(ref, ids);
          this.#freed(ref, freed);
        },
      },
      index: new MemoryIndex(),
      tenants: new MemoryTenantLearning(),
      extractions: options.extractions ?? new MemoryExtractionCache(),
      now,
      ...(options.log === undefined ? {} : { log: options.log }),
      ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
    });
    this.#now = now;
    this.#bounds = {
      maxSessions: options.maxSessions ?? MEMORY_DEFAULTS.maxSessions,
      maxBodyBytes: options.maxBodyBytes ?? MEMORY_DEFAULTS.maxBodyBytes,
      idleMs: (options.idleSeconds ?? MEMORY_DEFAULTS.idleSeconds) * 1000,
    };
    this.#sessions = sessions;
  }

  /**
   * Ends the sessions idle for an hour (session-lengths.ts): their lengths go to the tenant's
   * learning, once each, for the learned horizon. A long-running process calls it on its own
   * schedule (a deleted session is counted by `deleteSession` itself); returns how many ended.
   */
  async endIdleSessions(limit = 100): Promise<number> {
    const refs = await this.#sessions.ended(limit);
    for (const ref of refs) await this.endSession(ref);
    return refs.length;
  }

  /** Sessions and body bytes held now. */
  get usage(): { sessions: number; bodyBytes: number } {
    return { sessions: this.#uses.size, bodyBytes: this.#bytes };
  }

  /** The session is used now: most recently used; idle ones go, then any beyond the bound. */
  async #use(ref: SessionRef): Promise<void> {
    const key = keyOf(ref);
    const now = this.#now();
    const use = this.#uses.get(key) ?? { ref, at: now, bytes: 0 };
    this.#uses.delete(key);
    use.at = now;
    this.#uses.set(key, use);
    const { idleMs, maxSessions } = this.#bounds;
    for (const old of this.#uses.values()) {
      if (old === use || idleMs === 0 || now - old.at < idleMs) break;
      await this.#drop(old, "idle");
    }
    while (maxSessions > 0 && this.#uses.size > maxSessions) {
      const oldest = this.#uses.values().next().value!;
      await this.#drop(oldest, "max_sessions");
    }
  }

  async #added(ref: SessionRef, bytes: number): Promise<void> {
    const use = this.#uses.get(keyOf(ref));
    if (use === undefined) {
      await this.#use(ref);
      return this.#added(ref, bytes);
    }
    use.bytes += bytes;
    this.#bytes += bytes;
    const { maxBodyBytes } = this.#bounds;
    // Others first, least recently used first; the session being written last (its own bodies
    // alone beyond the bound: its commit is then refused, and its results stay full).
    while (maxBodyBytes > 0 && this.#bytes > maxBodyBytes) {
      const oldest: Use = [...this.#uses.values()].find((u) => u !== use) ?? use;
      await this.#drop(oldest, "max_body_bytes");
      if (oldest === use) break;
    }
  }

  #freed(ref: SessionRef, bytes: number): void {
    const use = this.#uses.get(keyOf(ref));
    if (use !== undefined) use.bytes -= bytes;
    this.#bytes -= bytes;
  }

  async #drop(use: Use, cause: Cause): Promise<void> {
    const key = keyOf(use.ref);
    await this.#forget(use.ref);
    this.#drops.set(key, cause);
    if (this.#drops.size > DROPS_KEPT) this.#drops.delete(this.#drops.keys().next().value!);
  }

  override async beginTurn(ref: SessionRef, ask: TurnAsk): Promise<Turn> {
    await this.#use(ref);
    return super.beginTurn(ref, ask);
  }

  override async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    if (this.#uses.has(keyOf(ref))) await this.#use(ref);
    return super.getBody(ref, memId);
  }

  override deleteSession(ref: SessionRef): Promise<void> {
    return this.#forget(ref);
  }

  /** The session deleted, its bytes uncounted (the purge's deletes count them off as they go). */
  async #forget(ref: SessionRef): Promise<void> {
    const key = keyOf(ref);
    try {
      await super.deleteSession(ref);
    } finally {
      const use = this.#uses.get(key);
      this.#uses.delete(key);
      if (use !== undefined) this.#bytes -= use.bytes;
    }
  }

  /** Why a body of this session is gone, when the store dropped the session (a recall says so). */
  async whyMissing(ref: SessionRef, _memId: string): Promise<string | null> {
    const cause = this.#drops.get(keyOf(ref));
    if (cause === undefined) return null;
    const { maxSessions, maxBodyBytes, idleMs } = this.#bounds;
    return cause === "idle"
      ? `the in-process MemoryStore dropped this conversation's stored results after ${idleMs / 1000} s unused`
      : cause === "max_sessions"
        ? `the in-process MemoryStore dropped this conversation's stored results: it keeps ${maxSessions} conversations, and this one was the least recently used`
        : `the in-process MemoryStore dropped this conversation's stored results: it keeps ${maxBodyBytes} bytes of them, and this conversation was the least recently used`;
  }
}

/** A body's size as counted against the bound (0 when absent). */
async function sizeIn(ledger: MemoryLedger, ref: SessionRef, memId: string): Promise<number> {
  return ((await ledger.get(ref, memId))?.body.length ?? 0) * 2;
}

/** The in-memory twin of the tenant's learning (sql-tenant.ts). */
export class MemoryTenantLearning implements TenantLearning {
  readonly #tools = new Map<string, Map<string, ToolStats>>();
  readonly #calibrations = new Map<string, Map<string, Calibration>>();
  /** Per tenant: the length buckets' weights, and the ended sessions that scale them. */
  readonly #lengths = new Map<string, { weights: Map<number, number>; ended: number }>();

  async read(tenant: string): Promise<TenantAggregate> {
    const lengths = this.#lengths.get(tenant);
    const sessionLengths =
      lengths === undefined ? undefined : lengthsOf(lengths.weights, lengths.ended);
    return structuredClone({
      ...(sessionLengths === undefined ? {} : { session_lengths: sessionLengths }),
      tools: Object.fromEntries(
        [...(this.#tools.get(tenant) ?? [])].filter(([, t]) => t.offloaded > 0),
      ),
      calibrations: Object.fromEntries(this.#calibrations.get(tenant) ?? []),
    });
  }

  async add(tenant: string, delta: TenantDelta): Promise<void> {
    const whole = (n: number | undefined) => Math.max(0, Math.trunc(n ?? 0));
    const tools = this.#tools.get(tenant) ?? new Map<string, ToolStats>();
    for (const [tool, d] of Object.entries(delta.tools ?? {})) {
      const t = tools.get(tool) ?? { offloaded: 0, recalls: 0 };
      tools.set(tool, {
        offloaded: t.offloaded + whole(d.offloaded),
        recalls: t.recalls + whole(d.recalls),
      });
    }
    this.#tools.set(tenant, tools);
    const cals = this.#calibrations.get(tenant) ?? new Map<string, Calibration>();
    for (const s of delta.samples ?? [])
      cals.set(s.model, calibrate(cals.get(s.model) ?? null, s.estimate, s.measured));
    this.#calibrations.set(tenant, cals);
    const ended = endedBuckets(delta.ended);
    if (ended.length === 0) return;
    const lengths = this.#lengths.get(tenant) ?? { weights: new Map<number, number>(), ended: 0 };
    this.#lengths.set(tenant, lengths);
    const add = lengthsAddition(lengths.ended, ended);
    if (add.rescale !== null)
      for (const [calls, w] of lengths.weights)
        if (w * add.rescale < FORGOTTEN_WEIGHT) lengths.weights.delete(calls);
        else lengths.weights.set(calls, w * add.rescale);
    for (const [calls, w] of add.weights)
      lengths.weights.set(calls, (lengths.weights.get(calls) ?? 0) + w);
    lengths.ended = add.ended;
  }
}
