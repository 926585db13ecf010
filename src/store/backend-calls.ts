/**
 * How a store calls its backends: every call bounded in time (a backend that hangs, a stuck
 * connection or an overloaded object, costs a bounded wait and a clear problem, never the client's
 * whole request; the call itself is not cancelled, no backend offers that, and its late outcome is
 * ignored), a failure that matters surfaces as one `storage_error` naming what failed, without
 * internals, and a best-effort write that fails becomes a note for the turn's summary, never a lost
 * result.
 */
import type { Problem } from "../core/problems.ts";
import { isOffloadError, OffloadError } from "../errors.ts";

/** Per backend, milliseconds. */
export interface StoreTimeouts {
  /** The session's state (a Durable Object call, a SQL transaction). */
  session: number;
  /** A ledger read or write (R2): bodies of up to tens of megabytes. */
  ledger: number;
  /** The lookup index (KV). */
  index: number;
  /** The tenant's learning. */
  tenants: number;
}

export const DEFAULT_TIMEOUTS: StoreTimeouts = {
  session: 10_000,
  ledger: 30_000,
  index: 5_000,
  tenants: 2_000,
};

export class StorageTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "StorageTimeout";
  }
}

export function withTimeout<T>(run: () => Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = run();
  return Promise.race([
    late,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StorageTimeout(ms)), ms);
    }),
  ]).finally(() => {
    if (timer !== null) clearTimeout(timer);
    // A call that answers after its timeout must not surface as an unhandled rejection.
    late.catch(() => {});
  });
}

/** Resolves on the event loop's next turn (what "off the path" waits for at most). */
export function nextTick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A cause as an operator's log line may show it: its name and the start of its message. */
export function describeCause(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message.slice(0, 200)}` : "unknown error";
}

/** Work the answer need not wait for, kept alive after it is sent (the Worker's `waitUntil`). */
export type Defer = (work: () => Promise<unknown>) => void;

export interface CallOptions {
  now?: (() => number) | undefined;
  /** Where backend failures are reported for operators (never bodies or keys). */
  log?: ((line: string) => void) | undefined;
  /** Bounds on each backend's calls (default: DEFAULT_TIMEOUTS). */
  timeouts?: Partial<StoreTimeouts> | undefined;
  /** Runs work after the answer (the Worker's `waitUntil`); without it, that work is awaited. */
  defer?: Defer | undefined;
}

/** A store's backend calls: their bounds, the clock, the log, the runtime's `defer`. */
export class BackendCalls {
  readonly timeouts: StoreTimeouts;
  readonly now: () => number;
  readonly log: (line: string) => void;
  readonly defer: Defer | undefined;

  constructor(options: CallOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? ((line) => console.error(line));
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.defer = options.defer;
  }

  /** A call that must succeed: bounded in time, and any failure one `storage_error`. */
  async guard<T>(
    what: string,
    run: () => Promise<T>,
    backend: keyof StoreTimeouts = "session",
  ): Promise<T> {
    try {
      return await withTimeout(run, this.timeouts[backend]);
    } catch (cause) {
      if (isOffloadError(cause) && cause.type !== "internal") throw cause;
      this.log(`[edge-offload] ${what} failed: ${describeCause(cause)}`);
      throw new OffloadError("storage_error", `${what} failed`, { cause });
    }
  }

  /**
   * Best effort: a write that fails is logged and, when `notes` are given, noted (nothing depends
   * on it having happened).
   */
  async soft(
    what: string,
    run: () => Promise<unknown>,
    backend: "index" | "tenants",
    notes?: Problem[],
    memId?: string,
  ): Promise<void> {
    try {
      await withTimeout(run, this.timeouts[backend]);
    } catch (cause) {
      this.log(`[edge-offload] ${what} failed: ${describeCause(cause)}`);
      notes?.push(
        backend === "index"
          ? {
              code: "index_error",
              message: `${what} failed (the result is safe; lookups fall back to the ledger)`,
              ...(memId === undefined ? {} : { mem_id: memId }),
            }
          : { code: "stats_error", message: `${what} failed (only the gate's learning is slowed)` },
      );
    }
  }

  /**
   * Best effort, off the turn's path: after the answer where the runtime can keep work alive
   * (`defer`); else started now and waited for only until the next tick of the event loop, so a
   * backend that fails at once is noted, and one that is slow or hangs costs the turn nothing (its
   * failure is logged when it comes).
   */
  async later(
    what: string,
    run: () => Promise<unknown>,
    backend: "index" | "tenants",
    notes?: Problem[],
    memId?: string,
  ): Promise<void> {
    if (this.defer !== undefined) {
      this.defer(() => this.soft(what, run, backend, undefined, memId));
      return;
    }
    const late: Problem[] = [];
    let waited = true;
    const work = this.soft(what, run, backend, late, memId).then(() => {
      if (waited) notes?.push(...late);
    });
    this.track(work);
    await Promise.race([work, nextTick()]);
    waited = false;
  }

  readonly #pending = new Set<Promise<unknown>>();

  /** Best-effort work still running (`settled` waits for it). */
  track(work: Promise<unknown>): void {
    const running = work.finally(() => this.#pending.delete(running));
    this.#pending.add(running);
  }

  /** Resolves once the best-effort work started so far (not handed to `defer`) is done. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}
