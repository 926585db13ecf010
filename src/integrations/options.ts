/**
 * What the in-process integrations (`offloadFetch`, `offloadMiddleware`) share: the options an app
 * gives once, checked when the integration is built (a wrong secret or config is a setup mistake,
 * thrown right away), and the way each call tells the app what happened without ever failing the
 * app's own call (callbacks that throw are ignored).
 */
import { type OffloadConfig, resolveConfig } from "../config.ts";
import type { AttachmentExtractor } from "../core/ports.ts";
import type { Problem } from "../core/problems.ts";
import { type SessionInput, sessionRef } from "../core/session.ts";
import type { Format, SessionRef } from "../core/types.ts";
import { isOffloadError, OffloadError, type OffloadErrorType } from "../errors.ts";
import type { Summary } from "../http/summary.ts";
import type { ProxyStore } from "../proxy/port.ts";
import { DEFAULT_MAX_HOPS } from "../proxy/upstream.ts";
import { deadlineOf, withDeadline } from "../store/deadline.ts";

/**
 * A store the integrations can use: any store of the core's port (a turn per call, recalls read
 * and counted). `MemoryStore`, the Worker's composed store and `AgentStore` all qualify.
 */
export type InProcessStore = ProxyStore;

/** The session of a call: fixed, or read from the call (a header, a field the app sets). */
export type SessionOf<C> = SessionInput | ((call: C) => SessionInput | Promise<SessionInput>);

/**
 * The request went out as the app sent it because edge-offload could not take part: the session
 * could not be named, the request's shape is not one the adapter reads, or an internal error.
 */
export interface PassThroughProblem {
  code: "passed_through";
  message: string;
  /** What stopped it (an OffloadError type). */
  cause: OffloadErrorType;
}

export type OffloadProblem = Problem | PassThroughProblem;

/** What one call did, as the proxy's `x-offload-summary` header says it. */
export interface OffloadCallReport {
  /** null when the session could not be named (the call then passed through). */
  session: SessionRef | null;
  format: Format;
  summary: Summary;
}

export interface InProcessOptions<C> {
  store: InProcessStore;
  session: SessionOf<C>;
  /**
   * The app's config layer (defaults fill the rest; a session's own layer, set with the store's
   * `setConfig`, goes over it). Compaction is off unless it says otherwise.
   */
  config?: unknown;
  /** Keys mem_ids: at least 16 characters, the same for every process serving a session. */
  secret: string;
  /** Extra provider calls one call may make to answer recall_tool_result (default 3, at most 16). */
  maxHops?: number;
  /** The attachment policy's extractor (without one, documents stay native). */
  extractor?: AttachmentExtractor;
  /** Every call's report (counts, savings, recall hops, problems). */
  onReport?: (report: OffloadCallReport) => void;
  /**
   * Every problem of a call: a store that failed (the result stayed full, or the whole request
   * went out as sent), a request passed through, a recall that could not be replayed.
   */
  onProblem?: (problem: OffloadProblem, session: SessionRef | null) => void;
  /** Operator lines (no bodies, no keys); default `console.warn`. */
  log?: (line: string) => void;
  /**
   * How long one store call may take (ms, default 5,000; Infinity: no bound). A store that does not
   * answer in time costs the call that much once: the request goes out full, with a `storage_error`
   * problem.
   */
  storeTimeoutMs?: number;
}

export interface Settings<C> {
  store: InProcessStore;
  session: SessionOf<C>;
  config: (sessionLayer: unknown) => OffloadConfig;
  secret: string;
  maxHops: number;
  extractor: AttachmentExtractor | undefined;
  log: (line: string) => void;
  report: (report: OffloadCallReport) => void;
  problem: (problem: OffloadProblem, session: SessionRef | null) => void;
}

const MAX_HOPS_LIMIT = 16;

/** Checks the options once; what is wrong with them is the app's setup, so it throws here. */
export function settingsOf<C>(options: InProcessOptions<C>): Settings<C> {
  if (typeof options.store?.beginTurn !== "function")
    throw new OffloadError("invalid_argument", "store must be a store with beginTurn()", {
      path: "store",
    });
  if (typeof options.secret !== "string" || options.secret.length < 16)
    throw new OffloadError("invalid_argument", "secret must be a string of 16 characters or more", {
      path: "secret",
    });
  const maxHops = options.maxHops ?? DEFAULT_MAX_HOPS;
  if (!Number.isInteger(maxHops) || maxHops < 0 || maxHops > MAX_HOPS_LIMIT)
    throw new OffloadError(
      "invalid_argument",
      `maxHops must be a whole number from 0 to ${MAX_HOPS_LIMIT}`,
      { path: "maxHops" },
    );
  const layer = options.config ?? {};
  // Parsed once: most sessions have no layer of their own, and a call then needs no parse at all.
  const resolved = resolveConfig(layer);
  const log = options.log ?? ((line: string) => console.warn(line));
  const { onReport, onProblem } = options;
  return {
    store: withDeadline(options.store, deadlineOf(options.storeTimeoutMs, "storeTimeoutMs")),
    session: options.session,
    config: (sessionLayer) =>
      isEmpty(sessionLayer) ? resolved : resolveConfig(layer, sessionLayer),
    secret: options.secret,
    maxHops,
    extractor: options.extractor,
    log,
    report: (report) => {
      if (onReport !== undefined) quietly(() => onReport(report), log);
      if (onProblem !== undefined)
        for (const p of report.summary.errors) quietly(() => onProblem(p, report.session), log);
    },
    problem: (problem, session) => {
      if (onProblem !== undefined) quietly(() => onProblem(problem, session), log);
    },
  };
}

function isEmpty(layer: unknown): boolean {
  return typeof layer === "object" && layer !== null && Object.keys(layer).length === 0;
}

/** An app's callback must not fail the app's call. */
function quietly(run: () => void, log: (line: string) => void): void {
  try {
    run();
  } catch {
    log("[edge-offload] an onReport/onProblem callback threw; ignored");
  }
}

/**
 * The call's session, or the OffloadError that says why it has none (`call` builds what a session
 * function reads, only when there is one).
 */
export async function resolveSession<C>(
  session: SessionOf<C>,
  call: () => C,
): Promise<SessionRef | OffloadError> {
  try {
    return sessionRef(typeof session === "function" ? await session(call()) : session);
  } catch (e) {
    if (isOffloadError(e)) return e;
    return new OffloadError("invalid_argument", "the session function threw", {
      path: "session",
    });
  }
}

export function passedThrough(e: OffloadError, what: string): PassThroughProblem {
  return {
    code: "passed_through",
    message: `${what}: ${e.message}`.slice(0, 300),
    cause: e.type,
  };
}
