/**
 * A store named by a URL, as `edge-offload serve --store` takes it: `sqlite:<file>` (`sqlite::memory:`
 * for one that lives as long as the process), `postgres://…` / `postgresql://…`, `redis://…` /
 * `rediss://…`, or `memory:`. Each engine's module is loaded only when named, so `pg` and `ioredis` are
 * needed only by those who use them.
 *
 * Attachment extractions are cached in the store (the SQL stores' table, Redis keys: shared by every
 * process on it, kept across restarts), with a bounded cache in the process (MemoryExtractionCache)
 * read first, so a file sent on every turn costs no round trip; `memory:` has only the latter.
 */
import type { ExtractionCache } from "../core/ports.ts";
import { OffloadError } from "../errors.ts";
import type { CallOptions } from "./backend-calls.ts";
import { MemoryExtractionCache } from "./memory-extractions.ts";
import type { ServiceStore } from "./ports.ts";

export interface OpenedStore {
  store: ServiceStore;
  /** What the URL named, without credentials (for a log line). */
  describe: string;
  close(): Promise<void>;
}

export interface OpenOptions extends CallOptions {
  retentionSeconds?: number | undefined;
  /**
   * The extraction cache instead of the store's own (default: the store's, behind a
   * MemoryExtractionCache with its default bounds).
   */
  extractions?: ExtractionCache | undefined;
}

/** The URL without its password. */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.href;
  } catch {
    return url.replace(/\/\/[^@/]*@/, "//***@");
  }
}

/** Opens the store a URL names (see above); a URL of no known kind is the caller's mistake. */
export async function openStore(url: string, opening: OpenOptions = {}): Promise<OpenedStore> {
  const options = { ...opening, extractionsFront: new MemoryExtractionCache() };
  const scheme = /^([a-z]+):/.exec(url)?.[1];
  if (scheme === "sqlite") {
    const file = url.slice("sqlite:".length).replace(/^\/\/(?=\/|\.)/, "");
    if (file === "")
      throw new OffloadError(
        "invalid_argument",
        "sqlite: needs a file, e.g. sqlite:./edge-offload.db",
        {
          path: "store",
        },
      );
    const { SqliteStore } = await import("./sqlite.ts");
    const store = await SqliteStore.open(file, options);
    return { store, describe: `sqlite:${file}`, close: () => store.close() };
  }
  if (scheme === "postgres" || scheme === "postgresql") {
    const { PostgresStore } = await import("./postgres.ts");
    const store = await PostgresStore.connect(url, options);
    return { store, describe: redacted(url), close: () => store.close() };
  }
  if (scheme === "redis" || scheme === "rediss") {
    const { RedisStore } = await import("./redis.ts");
    const store = await RedisStore.connect(url, options);
    return { store, describe: redacted(url), close: () => store.close() };
  }
  if (scheme === "memory") {
    const { MemoryStore } = await import("./memory.ts");
    // Its own cache is already in memory (bounded): no second level in front.
    const store = new MemoryStore(opening);
    return { store, describe: "memory:", close: async () => {} };
  }
  throw new OffloadError(
    "invalid_argument",
    `unknown store ${JSON.stringify(redacted(url).slice(0, 80))}: use sqlite:<file>, postgres://…, redis://… or memory:`,
    { path: "store" },
  );
}
