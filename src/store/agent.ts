/**
 * `AgentStore`: edge-offload's store inside a Cloudflare Agent's own Durable Object (the Agents SDK
 * runs one SQLite-backed object per conversation), so no second object is needed: the session
 * state, the lookup index and the gate's statistics in `eo_` tables of the agent's SQLite, bodies in
 * the same SQLite (chunked, no row over 1 MB) or, with a bucket, large ones in R2. Composed by the
 * same class as every other store, under the same rules.
 */

import { AgentIndex, AgentTenantStats } from "./agent-index.ts";
import { AgentLedger, type AgentLedgerOptions } from "./agent-ledger.ts";
import type { AgentStorage } from "./agent-sql.ts";
import { AgentSessionState } from "./agent-state.ts";
import { ComposedStore } from "./composed.ts";

export interface AgentStoreOptions extends AgentLedgerOptions {
  /** The clock of the session state (turn gaps, activity) and of the index (ms). */
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
  constructor(storage: AgentStorage, options: AgentStoreOptions = {}) {
    const now = options.now ?? Date.now;
    super({
      sessions: new AgentSessionState(storage, { now }),
      ledger: new AgentLedger(storage, options),
      index: new AgentIndex(storage),
      tenants: new AgentTenantStats(storage),
      now,
      ...(options.log === undefined ? {} : { log: options.log }),
    });
  }
}
