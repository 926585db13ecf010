/**
 * Work that may finish after the answer is sent (a steady turn's log line, index writes, the
 * tenant's learning): the request's `waitUntil`, when the runtime gave the app an execution context
 * (tests calling `app.fetch` without one get undefined, and the store then awaits everything).
 */
import type { Defer } from "../store/backend-calls.ts";

export type { Defer };

export function deferOf(c: {
  readonly executionCtx: { waitUntil(work: Promise<unknown>): void };
}): Defer | undefined {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work());
  } catch {
    return undefined;
  }
}
