/**
 * A test's server: its URL, or the test is skipped with the reason outside CI, and fails in CI (where
 * .ci/run installs Postgres and Redis, a missing one is a broken setup, not a reason to skip).
 */
import { inject } from "vitest";
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
