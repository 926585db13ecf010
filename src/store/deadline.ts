/**
 * A per-call deadline over any store of the core's port, for the in-process entries (`compact`,
 * `offloadFetch`, `offloadMiddleware`): every call, the turn's included, answers within `ms` or fails
 * as a `storage_error` naming the deadline, which the turn already handles (a begin that fails passes
 * the request through full; a body or a commit that fails keeps its results full; each with a problem
 * in the report). The late call is not cancelled (no store offers that) and its outcome is ignored.
 * A store of one's own that never answers so costs a call at most the deadline, once: its begin fails.
 */
import type { OffloadStore, Turn } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import { StorageTimeout, withTimeout } from "./backend-calls.ts";

/** The default per-call deadline of the in-process entries (ms). */
export const DEFAULT_STORE_DEADLINE_MS = 5_000;

/** The part of a store the turn and recall use, whatever the entry. */
type Bounded = Pick<OffloadStore, "beginTurn" | "getBody" | "noteRecall"> &
  Partial<Pick<OffloadStore, "whyMissing" | "hasBody">>;

/** Checks a deadline option: a positive number of milliseconds (Infinity: none). */
export function deadlineOf(value: unknown, path: string): number {
  if (value === undefined) return DEFAULT_STORE_DEADLINE_MS;
  if (typeof value !== "number" || !(value > 0))
    throw new OffloadError(
      "invalid_argument",
      `${path} must be a positive number of milliseconds`,
      {
        path,
      },
    );
  return value;
}

function bound<T>(what: string, ms: number, run: () => Promise<T>): Promise<T> {
  if (ms === Number.POSITIVE_INFINITY) return run();
  return withTimeout(run, ms).catch((cause: unknown) => {
    if (cause instanceof StorageTimeout)
      throw new OffloadError(
        "storage_error",
        `the store did not answer within ${ms} ms (${what}); the call went on without it`,
        { cause },
      );
    throw cause;
  });
}

/**
 * `target` seen with some methods replaced: everything else read from the target itself (its getters
 * and methods run on it, private fields and all), so `instanceof` and every property still hold.
 */
function over<T extends object>(target: T, replaced: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(replaced, prop)) return (replaced as Record<PropertyKey, unknown>)[prop];
      const value = Reflect.get(t, prop, t);
      return typeof value === "function" && prop !== "constructor" ? value.bind(t) : value;
    },
  });
}

/** The turn with each of its calls bounded. */
function boundedTurn(turn: Turn, ms: number): Turn {
  return over<Turn>(turn, {
    read: (ids: readonly string[]) => bound("reading records", ms, () => turn.read(ids)),
    putBody: (body: string, meta: Parameters<Turn["putBody"]>[1]) =>
      bound("storing a body", ms, () => turn.putBody(body, meta)),
    getBody: (memId: string) => bound("reading a body", ms, () => turn.getBody(memId)),
    hasBody: (memId: string) => bound("reading a body", ms, () => turn.hasBody(memId)),
    commit: (c: Parameters<Turn["commit"]>[0]) =>
      bound("saving decisions", ms, () => turn.commit(c)),
    finish: (f?: Parameters<Turn["finish"]>[0]) =>
      bound("finishing the turn", ms, () => turn.finish(f)),
  } as Partial<Turn>);
}

/**
 * `store` with every call bounded by `ms` (see above). The other methods of the store (reports,
 * deletes) pass through unchanged.
 */
export function withDeadline<S extends Bounded>(store: S, ms: number): S {
  if (ms === Number.POSITIVE_INFINITY) return store;
  return over<S>(store, {
    beginTurn: async (ref: SessionRef, ask: Parameters<OffloadStore["beginTurn"]>[1]) =>
      boundedTurn(await bound("beginning the turn", ms, () => store.beginTurn(ref, ask)), ms),
    getBody: (ref: SessionRef, memId: string) =>
      bound("reading a body", ms, () => store.getBody(ref, memId)),
    noteRecall: (ref: SessionRef, memId: string) =>
      bound("counting a recall", ms, () => store.noteRecall(ref, memId)),
    ...(store.whyMissing === undefined
      ? {}
      : {
          whyMissing: (ref: SessionRef, memId: string) =>
            bound("reading a body", ms, () => store.whyMissing!(ref, memId)),
        }),
    ...(store.hasBody === undefined
      ? {}
      : {
          hasBody: (ref: SessionRef, memId: string) =>
            bound("reading a body", ms, () => store.hasBody!(ref, memId)),
        }),
  } as Partial<S>);
}
