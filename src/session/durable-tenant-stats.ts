/**
 * The TenantStatsPort over the TenantDO namespace (the in-memory twin is memory-tenant-stats.ts).
 */

import type { ToolStats } from "../core/ports.ts";
import type { TenantStatsPort } from "../store/ports.ts";
import type { TenantDO } from "./tenant-do.ts";

export class DurableTenantStats implements TenantStatsPort {
  readonly #ns: DurableObjectNamespace<TenantDO>;

  constructor(ns: DurableObjectNamespace<TenantDO>) {
    this.#ns = ns;
  }

  #stub(tenant: string): DurableObjectStub<TenantDO> {
    return this.#ns.get(this.#ns.idFromName(tenant));
  }

  async load(tenant: string, toolNames: readonly string[]): Promise<Record<string, ToolStats>> {
    if (toolNames.length === 0) return {};
    return (await this.#stub(tenant).stats(toolNames)) as Record<string, ToolStats>;
  }

  async add(tenant: string, deltas: Record<string, Partial<ToolStats>>): Promise<void> {
    if (Object.keys(deltas).length === 0) return;
    await this.#stub(tenant).add(deltas);
  }
}
