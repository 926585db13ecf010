/**
 * `AgentStore`: edge-offload's store inside a Cloudflare Agent's own Durable Object (the Agents SDK
 * runs one SQLite-backed object per conversation), so no second object is needed: the session
 * state, the lookup index, the tenant's learning and the bodies are the SQL classes every SQL host
 * runs (sql-*.ts), in `eo_` tables of the agent's SQLite beside its own; with a bucket, large
 * bodies go to R2. Nothing here wipes the object's storage or touches its alarm (both are the
 * agent's): retention is the agent's, and `deleteSession` forgets a session when the app clears it.
 */
import { ComposedStore } from "./composed.ts";
import { type DurableStorage, durableSql } from "./sql.ts";
import { SqlIndex } from "./sql-index.ts";
import { type BodyBucket, SqlLedger } from "./sql-ledger.ts";
import { SqlSessionState } from "./sql-session.ts";
import { SqlTenantLearning } from "./sql-tenant.ts";

export interface AgentStoreOptions {
  /** Where bodies over `inlineMaxChars` go; without one, every body is chunked into SQLite. */
  bucket?: BodyBucket | undefined;
  /** Bodies up to this many characters stay in SQLite when a bucket is given (default 160,000). */
  inlineMaxChars?: number | undefined;
  /** The clock of the session state (turn gaps, activity) (ms). */
  now?: () => number;
  /** Where backend failures are reported (default: console.error). */
  log?: (line: string) => void;
}

/**
 * A store in the agent's own Durable Object storage (`this.ctx.storage` of a SQLite-backed
 * object, e.g. an `AIChatAgent`).
 *
 * @example
 * const store = new AgentStore(this.ctx.storage, { bucket: this.env.BODIES });
 * const middleware = offloadMiddleware({ store, session: this.name, secret: this.env.OFFLOAD_SECRET });
 */
export class AgentStore extends ComposedStore {
  constructor(storage: DurableStorage, options: AgentStoreOptions = {}) {
    const sql = durableSql(storage);
    const now = options.now ?? Date.now;
    super({
      // The agent's lifetime is the conversation's: no retention of our own.
      sessions: new SqlSessionState(sql, { now, retentionSeconds: 0 }),
      ledger: new SqlLedger(sql, {
        bucket: options.bucket,
        inlineMaxChars: options.inlineMaxChars,
      }),
      index: new SqlIndex(sql),
      tenants: new SqlTenantLearning(sql),
      now,
      ...(options.log === undefined ? {} : { log: options.log }),
    });
  }
}
