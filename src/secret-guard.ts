/**
 * The library's `compact`: the core's turn transform, plus one warning per process when a store other than the
 * in-process MemoryStore runs on the built-in development secret (no `secret`, that secret itself, or one
 * shorter than 16 characters, the service's own minimum).
 *
 * mem_ids are HMACs keyed by the secret, so that nobody can compute one from a body. The development secret is
 * printed in this package, so with it anyone who can guess a body can compute its id. In a MemoryStore that
 * reaches nothing outside the process; in a shared or persistent store (several processes, a database, the
 * Worker's R2/KV) it does. Warned rather than refused: refusing would turn a library upgrade into failures on
 * live traffic that works today, and no default secret could be safer, since a random one would change every
 * id on restart and orphan the stubs already sent. The Worker itself refuses to start a turn without a proper
 * OFFLOAD_SECRET.
 */
import type { OffloadConfigLike } from "./config.ts";
import { type CompactInput, compact as coreCompact } from "./core/compact.ts";
import { DEV_SECRET } from "./core/memid.ts";
import { MemoryStore } from "./store/memory.ts";

/** The service's minimum (OFFLOAD_SECRET), applied here as a warning. */
export const MIN_SECRET_CHARS = 16;

/** Why `input` would be flagged, or null. */
export function devSecretProblem(input: {
  store?: unknown;
  secret?: string | undefined;
  config?: unknown;
}): string | null {
  const enabled = (input.config as { tool_result_compaction_enabled?: unknown } | undefined)
    ?.tool_result_compaction_enabled;
  if (enabled !== true || input.store instanceof MemoryStore) return null;
  const secret = input.secret;
  const why =
    secret === undefined || secret === ""
      ? "no secret was given, so the built-in development secret keys the mem_ids"
      : secret === DEV_SECRET
        ? "the secret is the built-in development secret"
        : secret.length < MIN_SECRET_CHARS
          ? `the secret is shorter than ${MIN_SECRET_CHARS} characters`
          : null;
  if (why === null) return null;
  const store = (input.store as object | null)?.constructor?.name ?? "a custom store";
  return `edge-offload: compact() with a shared store (${store}): ${why}, so anyone who can guess a stored body can compute its mem_id. Pass \`secret\` (32+ random characters, kept stable, e.g. process.env.OFFLOAD_SECRET). This warning is shown once.`;
}

/** `compact` that warns (through `warn`, once) about the development secret on a shared store. */
export function guardedCompact(
  warn: (message: string) => void = (m) => console.warn(m),
): typeof coreCompact {
  let warned = false;
  return <R extends string | object, C extends OffloadConfigLike = OffloadConfigLike>(
    input: CompactInput<R, C>,
  ) => {
    if (!warned) {
      const problem = devSecretProblem(input);
      if (problem !== null) {
        warned = true;
        warn(problem);
      }
    }
    return coreCompact(input);
  };
}
