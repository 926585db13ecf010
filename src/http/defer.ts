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

/**
 * A Defer that holds its work until `release`, then starts it, and starts later work at once. The
 * proxy releases it once the provider has answered, so a steady turn's log line does not compete
 * with the provider call it precedes. Without a runtime's Defer the store awaits everything, and
 * this holds nothing.
 */
export function heldDefer(defer: Defer | undefined): { defer: Defer | undefined; release(): void } {
  if (defer === undefined) return { defer: undefined, release: () => {} };
  let held: (() => Promise<unknown>)[] | null = [];
  return {
    defer: (work) => (held === null ? defer(work) : held.push(work)),
    release: () => {
      const queued = held ?? [];
      held = null;
      for (const work of queued) defer(work);
    },
  };
}
