/**
 * The commands' progress line on a terminal: what is counted (the replay: one session replayed under one
 * policy; the eval: one sampled call sent), how far, and an estimate of the time left from the pace so far.
 * Pure, so the wording and the estimate are testable.
 */

/** A duration for people: "45s", "3m 05s", "1h 02m". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** What a progress line counts: `replaying` … `session×policy runs`. */
export interface Counted {
  verb: string;
  unit: string;
}

export const REPLAY_RUNS: Counted = { verb: "replaying", unit: "session×policy runs" };

/**
 * `replaying: 12 of 48 session×policy runs (25%), about 1m 20s left`. The estimate waits for one finished run
 * and a second of history: before that the pace says nothing.
 */
export function progressLine(
  done: number,
  total: number,
  elapsedMs: number,
  what: Counted = REPLAY_RUNS,
): string {
  const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
  const head = `${what.verb}: ${done} of ${total} ${what.unit} (${pct}%)`;
  if (done >= total) return `${head}, done in ${formatDuration(elapsedMs)}`;
  if (done === 0 || elapsedMs < 1000) return `${head}, estimating time left…`;
  return `${head}, about ${formatDuration((elapsedMs / done) * (total - done))} left`;
}

export interface ProgressSink {
  write(text: string): unknown;
}

/**
 * A reporter for a command's onProgress that redraws one line (at most ~10 times a second) and erases it when
 * the run ends, so the table that follows starts on a clean line. `note` is appended (e.g. the dollars spent).
 */
export function progressReporter(
  sink: ProgressSink,
  now: () => number = Date.now,
  what: Counted = REPLAY_RUNS,
): { update(done: number, total: number, note?: string): void; end(): void } {
  const start = now();
  let last = -Infinity;
  let drawn = false;
  return {
    update(done, total, note) {
      const t = now();
      if (done < total && t - last < 100) return;
      last = t;
      drawn = true;
      const line = progressLine(done, total, t - start, what);
      sink.write(`\r\x1b[K${note === undefined ? line : `${line}; ${note}`}`);
    },
    end() {
      if (drawn) sink.write("\r\x1b[K");
    },
  };
}
