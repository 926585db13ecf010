/**
 * How a session reaches its tenant's learning statistics without a hot spot: through one of the
 * tenant's shards (TenantDO objects named `<tenant>/shard/<k>`, the session's hash picking k), each
 * of which batches its sessions' deltas and keeps a copy of the tenant's counts. Only the shards
 * call the tenant's own object (named `<tenant>`), each at most once per SHARD_SYNC_MS plus once
 * per tool name it first meets, so the tenant object's request rate is bounded by the number of
 * shards, whatever the number of sessions (docs/scale.md).
 */
import type { CalibrationSample } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import { OffloadError } from "../errors.ts";
import { DEFAULT_SHARDS, shardOf } from "./stats-timing.ts";
import type { TenantAnswer, TenantExchange } from "./tenant-copy.ts";

export { DEFAULT_SHARDS, SHARD_SYNC_MS, shardOf } from "./stats-timing.ts";

export function parseShards(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return DEFAULT_SHARDS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new OffloadError(
      "internal",
      "OFFLOAD_TENANT_STATS_SHARDS must be a whole number from 1 to 1024",
    );
  return n;
}

/** Tenant ids cannot contain "/", so a shard's name never names a tenant. */
export function shardName(tenant: string, shard: number): string {
  return `${tenant}/shard/${shard}`;
}

/** The session's exchange with its shard. */
export function statsExchange(env: Env, ref: SessionRef): TenantExchange {
  const name = shardName(
    ref.tenant,
    shardOf(ref.session, parseShards(env.OFFLOAD_TENANT_STATS_SHARDS)),
  );
  return async (
    deltas: Record<string, ToolStats>,
    names: readonly string[],
    samples: readonly CalibrationSample[],
  ) =>
    (await env.TENANTS.get(env.TENANTS.idFromName(name)).exchange(
      ref.tenant,
      deltas,
      [...names],
      [...samples],
    )) as TenantAnswer;
}
