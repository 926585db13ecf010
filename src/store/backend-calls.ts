/**
 * What a composed store is made of (`StoreParts`) and how it calls its backends: every call bounded
 * in time (timeout.ts); a failure that matters surfaces as one `storage_error` naming what failed,
 * without internals; a best-effort write that fails becomes a note for the call's summary, never a
 * lost result.
 */
import type { ExtractionCache } from "../core/ports.ts";
import type { IndexProblem, StatsProblem } from "../core/problems.ts";
import { isOffloadError, OffloadError } from "../errors.ts";
import type {
  BodyLedgerPort,
  CalibrationPort,
  IndexPort,
  SessionStatePort,
  TenantStatsPort,
} from "./ports.ts";
import { DEFAULT_TIMEOUTS, type StoreTimeouts, withTimeout } from "./timeout.ts";

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

/** One call's backend calls: the parts, their bounds, and the notes its summary carries. */
export class BackendCalls {
  readonly notes: (IndexProblem | StatsProblem)[] = [];
  readonly parts: StoreParts;
  readonly timeouts: StoreTimeouts;
  readonly now: () => number;
  readonly log: (line: string) => void;

  constructor(parts: StoreParts) {
    this.parts = parts;
    this.now = parts.now ?? Date.now;
    this.log = parts.log ?? ((line) => console.error(line));
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...parts.timeouts };
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
   * A best-effort write the answer need not wait for: deferred when the caller can keep work alive
   * after the answer (its failure is then only logged), else done now and noted.
   */
  async later(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code: "index_error" | "stats_error" = "index_error",
  ): Promise<void> {
    const defer = this.parts.defer;
    if (defer === undefined) return this.soft(what, run, memId, code);
    defer(() => this.soft(what, run, memId, code));
  }

  /** Best effort: an index write that fails is noted, and nothing depends on it having happened. */
  async soft(
    what: string,
    run: () => Promise<void>,
    memId?: string,
    code: "index_error" | "stats_error" = "index_error",
  ): Promise<void> {
    try {
      await withTimeout(run, this.timeouts[code === "index_error" ? "index" : "tenants"]);
    } catch (cause) {
      this.log(`[edge-offload] ${what} failed: ${describeCause(cause)}`);
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
}

/** A cause as an operator's log line may show it: its name and the start of its message. */
export function describeCause(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message.slice(0, 200)}` : "unknown error";
}
