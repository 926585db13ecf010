// The tenant's learning statistics travel in the background (a session's alarm sends its deltas to its
// shard, a shard's alarm to the tenant's object, copies refresh when stale): tests make that happen now.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import type { SessionRef } from "../../src/core/types.ts";
import { sessionObjectName } from "../../src/session/state.ts";
import { DEFAULT_SHARDS, shardName } from "../../src/session/tenant-shards.ts";

function sessionStub(ref: SessionRef) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName(ref)));
}

function forget(sql: SqlStorage, table: string, key: string): void {
  const exists = sql
    .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table)
    .toArray().length;
  if (exists > 0) sql.exec(`DELETE FROM ${table} WHERE key = ?`, key);
}

/**
 * Every delta of these sessions reaches the tenant's object, and every copy (shards', sessions') reads
 * fresh on its next use.
 */
export async function settleTenantStats(refs: readonly SessionRef[]): Promise<void> {
  for (const ref of refs) await runDurableObjectAlarm(sessionStub(ref));
  for (const tenant of new Set(refs.map((r) => r.tenant)))
    for (let k = 0; k < DEFAULT_SHARDS; k++) {
      const shard = env.TENANTS.get(env.TENANTS.idFromName(shardName(tenant, k)));
      await runDurableObjectAlarm(shard);
      await runInDurableObject(shard, (_o, state) =>
        forget(state.storage.sql, "shard_meta", "copy_at"),
      );
    }
  for (const ref of refs)
    await runInDurableObject(sessionStub(ref), (_o, state) =>
      forget(state.storage.sql, "meta", "stats_copy_at"),
    );
}
