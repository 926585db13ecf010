/**
 * The Worker's side of the Durable Objects: the session state over the SessionDO namespace (one
 * object per tenant+session) and the tenant's learning over the TenantDO namespace (one object per
 * tenant), each method one RPC call.
 */
import type { SessionRef } from "../core/types.ts";
import type {
  RecordsResult,
  SessionCommitResult,
  SessionDetail,
  SessionReportData,
  SessionStart,
  SessionState,
  TenantAggregate,
  TenantLearning,
  UsageOutcome,
} from "./ports.ts";
import type { SessionDO } from "./session-do.ts";
import { sessionObjectName } from "./state.ts";
import type { TenantDO } from "./tenant-do.ts";

export function durableSessionState(ns: DurableObjectNamespace<SessionDO>): SessionState {
  // The tenant is part of the name: another tenant's session with the same id is another object.
  const stub = (ref: SessionRef) => ns.get(ns.idFromName(sessionObjectName(ref)));
  return {
    begin: async (ref, ask) => (await stub(ref).begin(ref, ask)) as SessionStart,
    records: async (ref, ids) =>
      (await stub(ref).records(ref, ids)) as Awaited<ReturnType<SessionState["records"]>>,
    addRecords: async (ref, batch) => (await stub(ref).addRecords(ref, batch)) as RecordsResult,
    commit: async (ref, commit) => (await stub(ref).commit(ref, commit)) as SessionCommitResult,
    finish: async (ref, seq, finish) => {
      await stub(ref).finish(ref, seq, finish);
    },
    noteRecall: async (ref, memId) => (await stub(ref).noteRecall(ref, memId)) as string | null,
    recordUsage: async (ref, key, usage) =>
      (await stub(ref).recordUsage(ref, key, usage)) as UsageOutcome | null,
    describe: async (ref) => (await stub(ref).describe(ref)) as SessionDetail | null,
    report: async (ref, options) =>
      (await stub(ref).report(ref, options)) as SessionReportData | null,
    getConfig: async (ref) => await stub(ref).getConfig(ref),
    setConfig: async (ref, patch) => {
      await stub(ref).setConfig(ref, patch);
    },
    destroy: async (ref) => await stub(ref).destroy(ref),
    purged: async (ref) => {
      await stub(ref).purged(ref);
    },
    end: async (ref, options) => await stub(ref).end(ref, options),
  };
}

const tenantPorts = new WeakMap<object, TenantLearning>();

/**
 * The tenant's learning over the TenantDO namespace: one port per namespace binding, so the
 * isolate's cache over it (tenant-cache.ts) serves every request of the isolate.
 */
export function durableTenants(ns: DurableObjectNamespace<TenantDO>): TenantLearning {
  let port = tenantPorts.get(ns);
  if (port === undefined) {
    const stub = (tenant: string) => ns.get(ns.idFromName(tenant));
    port = {
      read: async (tenant) => (await stub(tenant).read(tenant)) as TenantAggregate,
      add: async (tenant, delta) => {
        await stub(tenant).add(tenant, delta);
      },
    };
    tenantPorts.set(ns, port);
  }
  return port;
}
