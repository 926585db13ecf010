/**
 * TenantDO: one per tenant (`idFromName(tenant)`), the host of the tenant's learning
 * (sql-tenant.ts) in its own SQLite. Sessions' turns never call it on their path: the Worker reads
 * it through a per-isolate cache and adds to it after the answer (tenant-cache.ts, composed.ts).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import type { TenantAggregate, TenantDelta } from "./ports.ts";
import { durableSql } from "./sql.ts";
import { SqlTenantLearning } from "./sql-tenant.ts";

export class TenantDO extends DurableObject<Env> {
  readonly #learning: SqlTenantLearning;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#learning = new SqlTenantLearning(durableSql(ctx.storage));
  }

  read(tenant: string): Promise<TenantAggregate> {
    return this.#learning.read(tenant);
  }

  add(tenant: string, delta: TenantDelta): Promise<void> {
    return this.#learning.add(tenant, delta);
  }
}
