// The tenant's learning travels in the background (added after the answer, read through the isolate's cache
// with a time to live): tests make the next turns read it fresh now.
import { env } from "cloudflare:test";
import type { SessionRef } from "../../src/core/types.ts";
import { durableTenants } from "../../src/store/durable.ts";
import { tenantCacheOf } from "../../src/store/tenant-cache.ts";

/** What these sessions' tenants learned, read afresh into the isolate's cache. */
export async function settleTenantLearning(refs: readonly SessionRef[]): Promise<void> {
  const cache = tenantCacheOf(durableTenants(env.TENANTS));
  for (const tenant of new Set(refs.map((r) => r.tenant))) await cache.read(tenant);
}
