/**
 * Where things live in the service's backends: ledger keys (R2), index keys (KV) and cached
 * extractions (R2). Tenant and session come first in every key, so a session's (or a tenant's)
 * entries share one listable prefix; ids cannot contain "/" (core/session.ts), so `a/b/` never
 * prefixes another session's keys.
 */
import type { SessionRef } from "../core/types.ts";

/** R2 key of a cached extraction: the tenant first; the key is `<sha256>/<format>/<variant>`. */
export function extractionKey(tenant: string, key: string): string {
  return `${EXTRACTS_PREFIX}${tenant}/${key}`;
}

export const EXTRACTS_PREFIX = "extracts/";

/**
 * The ledger key of a body: tenant and session first, so a session's bodies share one listable
 * prefix.
 */
export function ledgerKey(ref: SessionRef, memId: string): string {
  return `${ledgerPrefix(ref)}${memId}`;
}

/**
 * Ids cannot contain "/" (see core/session.ts), so `a/b/` never prefixes another session's keys.
 */
export function ledgerPrefix(ref: SessionRef): string {
  return `bodies/${ref.tenant}/${ref.session}/`;
}

/**
 * KV keys: `s/<tenant>/<session>` (tenant → sessions) and `m/<tenant>/<session>/<mem_id>` (mem_id →
 * location).
 */
export function indexSessionKey(ref: SessionRef): string {
  return `${indexSessionPrefix(ref.tenant)}${ref.session}`;
}

export function indexSessionPrefix(tenant: string): string {
  return `s/${tenant}/`;
}

export function indexBodyKey(ref: SessionRef, memId: string): string {
  return `m/${ref.tenant}/${ref.session}/${memId}`;
}
