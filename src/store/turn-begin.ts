/**
 * A composed store's reads for a turn: `begin` (the config, the records and the memos in one round
 * trip where the session state offers it), held for the turn's `load`, which is served from it
 * (only ids it did not cover are asked again), and the tenant's statistics where the session state
 * does not hold a copy.
 */
import type { LoadedState, ToolStats } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { ProxyMemo } from "../proxy/port.ts";
import { anchoredMemos } from "../session/memos.ts";
import { type BackendCalls, describeCause } from "./backend-calls.ts";
import type { ServiceStore, SessionLoad } from "./ports.ts";
import {
  type BeginAsk,
  batches,
  RPC_BUDGET_BYTES,
  type TurnLease,
  type TurnStart,
} from "./turn-protocol.ts";

/** The lease as this store hands it to the core: the session's, and when it was received here. */
export interface HeldLease extends TurnLease {
  received: number;
}

/** A begin's answer, kept for the turn's `load`. */
interface Prefetch {
  key: string;
  covered: Set<string>;
  names: Set<string>;
  state: SessionLoad;
}

export class TurnBegin {
  readonly #calls: BackendCalls;
  /** The store's own guarded reads, for a session state without `begin`. */
  readonly #store: Pick<ServiceStore, "getConfig" | "proxyState">;
  #prefetch: Prefetch | null = null;

  constructor(calls: BackendCalls, store: Pick<ServiceStore, "getConfig" | "proxyState">) {
    this.#calls = calls;
    this.#store = store;
  }

  /**
   * A turn's first read: the session's config layer, the records of `ask.ids` and the proxy's
   * memos anchored on `ask.anchors`, in one round trip where the session state offers `begin`
   * (else its config, its memos and a load, at once). The turn's `load` is then served from here.
   */
  async begin(ref: SessionRef, ask: BeginAsk): Promise<TurnStart> {
    const sessions = this.#calls.parts.sessions;
    if (sessions.begin === undefined) {
      const [proxy, state] = await Promise.all([
        ask.anchors === undefined
          ? this.#store.getConfig(ref).then((config) => ({ config, memos: [] as ProxyMemo[] }))
          : this.#store.proxyState(ref),
        ask.ids === null ? null : this.#loadAll(ref, ask.ids, ask.names),
      ]);
      const memos = anchoredMemos(proxy.memos, ask.anchors);
      if (state !== null) this.#hold(ref, [...ask.ids!], ask.names, state);
      return { config: proxy.config, memos };
    }
    const begun = await this.#calls.guard("reading the session state", () =>
      sessions.begin!(ref, ask),
    );
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

  /** The turn's state: from the begin's answer where it covers the ask, else read now. */
  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[],
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
        : { lease: { ...state.lease, received: this.#calls.now() } satisfies HeldLease }),
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
        const part = await this.#calls.guard("reading the session state", () =>
          this.#calls.parts.sessions.load(ref, run, first === null ? names : []),
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
    const tenants = this.#calls.parts.tenants;
    if (tenants === undefined || toolNames.length === 0) return {};
    try {
      return await tenants.load(tenant, toolNames);
    } catch (cause) {
      this.#calls.log(
        `[edge-offload] reading the tenant statistics failed: ${describeCause(cause)}`,
      );
      this.#calls.notes.push({
        code: "stats_error",
        message: "the tenant's learning statistics could not be read",
      });
      return {};
    }
  }
}

function scopeKey(ref: SessionRef): string {
  return JSON.stringify([ref.tenant, ref.session]);
}
