/**
 * The library's default store: the in-memory twins of every backend (session state, ledger, index,
 * tenant learning, extraction cache) composed by the same class, under the same rules, as the
 * Worker's store. It is also what the contract suites are checked against first. Values are cloned
 * on the way in and out, as a serializing store would.
 */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
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
}

/**
 * Everything in memory, for one process: tests, scripts, a Node service that keeps sessions for its
 * own lifetime. Calls running at once may share it.
 *
 * @example
 * const store = new MemoryStore();
 * const config = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
 * const out = await compact({ request, session: "chat-42", store, config });
 */
export class MemoryStore extends ComposedStore {
  readonly #sessions: MemorySessionState;

  constructor(options: MemoryStoreOptions = {}) {
    const now = options.now ?? Date.now;
    const sessions = new MemorySessionState({ now });
    super({
      sessions,
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      tenants: new MemoryTenantLearning(),
      extractions: new MemoryExtractionCache(),
      now,
      ...(options.log === undefined ? {} : { log: options.log }),
    });
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
