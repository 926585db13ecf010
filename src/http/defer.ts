/**
 * Work that may finish after the answer is sent (a steady turn's log line): the request's
 * `waitUntil`, when the runtime gave the app an execution context (tests calling `app.fetch`
 * without one get undefined, and the store then awaits everything).
 */
export type Defer = (work: () => Promise<unknown>) => void;

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
