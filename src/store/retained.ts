/**
 * `RetainedStore`: a composed store over backends that hold many sessions (a SQL database, Redis), with
 * the upkeep a Durable Object's alarm does for one: a sweep, run in the background every `sweepEveryMs`,
 * counts the length of each session idle for an hour (the tenant's learned horizon), purges the
 * sessions idle past the retention (state, bodies, index entries, as `deleteSession` does),
 * purges again those whose purge nobody confirmed, deletes the bodies refused commits wrote, and the
 * store's cached extractions past their lifetime.
 */
import type { ExtractionCache } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import { type CallOptions, describeCause, withTimeout } from "./backend-calls.ts";
import { ComposedStore, type StoreParts } from "./composed.ts";
import { TieredExtractionCache } from "./extractions.ts";
import { TenantCache } from "./tenant-cache.ts";

/** How often the background sweep runs by default (ms). */
export const DEFAULT_SWEEP_MS = 60_000;
/** Sessions one sweep handles at most, of each kind (the next sweep goes on). */
const SWEEP_LIMIT = 100;
/** Expired extractions one sweep deletes at most (rows are small to find, and one statement). */
const EXTRACTIONS_SWEEP_LIMIT = 1000;

/** What the sweep asks of a session state that holds many sessions. */
export interface SweptState {
  /** Sessions idle for an hour whose length is not counted yet (session-lengths.ts). */
  ended(limit: number): Promise<SessionRef[]>;
  /** Sessions idle past the retention, or whose purge was never confirmed. */
  expired(limit: number): Promise<SessionRef[]>;
  /** Sessions with bodies noted for deletion. */
  orphaned(limit: number): Promise<SessionRef[]>;
  pendingOrphans(ref: SessionRef): Promise<string[]>;
  orphansDeleted(ref: SessionRef, memIds: readonly string[]): Promise<void>;
}

export interface RetainedStoreOptions extends CallOptions {
  /**
   * Idle sessions are purged this long after their last activity (0: kept until deleted); default
   * 7 days, as `OFFLOAD_RETENTION_SECONDS` on the Worker.
   */
  retentionSeconds?: number | undefined;
  /** How often the sweep runs (ms, default 60 s); 0: never by itself (call `sweep()`). */
  sweepEveryMs?: number | undefined;
  /**
   * Where attachment extractions are cached instead of the store's own (SqlStore: its
   * `<prefix>extractions` table; RedisStore: keys with the retention as their TTL).
   */
  extractions?: ExtractionCache | undefined;
  /**
   * A cache in the process read before the store's own and written with it (`serve` gives a bounded
   * MemoryExtractionCache: a file sent on every turn is then read without a round trip). Ignored when
   * `extractions` is given.
   */
  extractionsFront?: ExtractionCache | undefined;
}

/** A store's own extraction cache; the sweep deletes its entries past their lifetime (SQL). */
export interface OwnExtractions extends ExtractionCache {
  /** Deletes up to `limit` expired entries; how many it deleted (absent: they expire by themselves). */
  expire?(limit: number): Promise<number>;
}

/** What one sweep did. */
export interface SweepResult {
  /** Sessions idle for an hour whose length went to the tenant's learning. */
  ended: number;
  /** Sessions purged: idle past the retention, or a purge nobody confirmed. */
  purged: number;
  /** Bodies of refused commits deleted. */
  orphans: number;
  /** Cached extractions past their lifetime deleted. */
  extractions: number;
}

/** A composed store with retention's sweep (see above). */
export class RetainedStore extends ComposedStore {
  /** The tenant's learning as turns read it: a process's cache, or null when read directly. */
  readonly tenantCache: TenantCache | null;
  readonly #state: SweptState;
  readonly #parts: StoreParts;
  readonly #log: (line: string) => void;
  #timer: ReturnType<typeof setInterval> | null = null;
  #sweeping: Promise<SweepResult> | null = null;

  /** The store's own extraction cache, when it has one (the sweep expires its entries). */
  readonly #ownExtractions: OwnExtractions | undefined;

  /**
   * `own`: the store's own extraction cache, used (behind `extractionsFront`) unless the parts name
   * another.
   */
  constructor(
    parts: StoreParts & Pick<RetainedStoreOptions, "sweepEveryMs" | "extractionsFront">,
    state: SweptState,
    own?: OwnExtractions,
  ) {
    super({ ...parts, extractions: parts.extractions ?? inFront(parts.extractionsFront, own) });
    this.#ownExtractions = own;
    this.#state = state;
    this.#parts = parts;
    this.tenantCache = parts.tenants instanceof TenantCache ? parts.tenants : null;
    this.#log = parts.log ?? ((line) => console.error(line));
    const every = parts.sweepEveryMs ?? DEFAULT_SWEEP_MS;
    if (every > 0) {
      this.#timer = setInterval(() => {
        this.sweep().catch((e) =>
          this.#log(`[edge-offload] the retention sweep failed: ${describeCause(e)}`),
        );
      }, every);
      // The sweep never keeps a process alive by itself.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /**
   * One pass of upkeep (the background timer runs it; a serverless host may call it on a schedule of
   * its own). Passes of one store never overlap; several processes may sweep at once.
   */
  sweep(): Promise<SweepResult> {
    this.#sweeping ??= this.#sweep().finally(() => {
      this.#sweeping = null;
    });
    return this.#sweeping;
  }

  async #sweep(): Promise<SweepResult> {
    let ended = 0;
    for (const ref of await this.#state.ended(SWEEP_LIMIT)) {
      await this.endSession(ref);
      ended++;
    }
    let purged = 0;
    for (const ref of await this.#state.expired(SWEEP_LIMIT)) {
      await this.deleteSession(ref);
      purged++;
    }
    let orphans = 0;
    for (const ref of await this.#state.orphaned(SWEEP_LIMIT)) {
      // A record naming one of these bodies is refused meanwhile, and until a lease after it is gone.
      const due = await this.#state.pendingOrphans(ref);
      if (due.length > 0) {
        await this.#parts.index.deleteBodies(ref, due);
        await this.#parts.ledger.delete(ref, due);
      }
      await this.#state.orphansDeleted(ref, due);
      orphans += due.length;
    }
    const extractions = (await this.#ownExtractions?.expire?.(EXTRACTIONS_SWEEP_LIMIT)) ?? 0;
    return { ended, purged, orphans, extractions };
  }

  /**
   * Stops the background sweep and waits (10 s at most) for a running one and for the work after
   * earlier answers; a host then closes its engine.
   */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    const running = this.#sweeping;
    await withTimeout(() => Promise.allSettled([running, this.settled()]), 10_000).catch(() => {});
  }
}

function inFront(
  front: ExtractionCache | undefined,
  own: ExtractionCache | undefined,
): ExtractionCache | undefined {
  if (own === undefined) return front;
  return front === undefined ? own : new TieredExtractionCache(front, own);
}
