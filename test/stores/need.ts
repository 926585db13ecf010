/**
 * A test's server: its URL, or the test is skipped with the reason outside CI, and fails in CI (where
 * .ci/run installs Postgres and Redis, a missing one is a broken setup, not a reason to skip).
 */
import { inject } from "vitest";
import type { SessionRef } from "../../src/core/types.ts";
import type { RetainedStore } from "../../src/store/retained.ts";
import { CI } from "../support/servers.ts";

export interface Need {
  /** The URL; undefined when the server is missing (the suites are then skipped). */
  url: string | undefined;
  /** Why it is missing (a message for the skip), or null. */
  why: string | null;
}

export function need(server: "postgres" | "redis"): Need {
  const value = inject(server);
  if (!value.startsWith("missing: ")) return { url: value, why: null };
  const why = value.slice("missing: ".length);
  if (CI) throw new Error(`${server} is required in CI: ${why}`);
  console.warn(`[stores] skipping the ${server} tests: ${why}`);
  return { url: undefined, why };
}

/** The tenant's learning travels through the store's cache: the next turns read what was added now. */
export async function settle(store: RetainedStore, refs: readonly SessionRef[]): Promise<void> {
  await store.settled();
  for (const tenant of new Set(refs.map((r) => r.tenant))) await store.tenantCache?.read(tenant);
}
