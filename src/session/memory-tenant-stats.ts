/** The in-memory twin of the TenantDO's statistics (same clamping of deltas). */

import type { ToolStats } from "../core/ports.ts";
import type { TenantStatsPort } from "../store/ports.ts";

export class MemoryTenantStats implements TenantStatsPort {
  readonly #tenants = new Map<string, Map<string, ToolStats>>();

  async load(tenant: string, toolNames: readonly string[]): Promise<Record<string, ToolStats>> {
    const map = this.#tenants.get(tenant);
    const out: Record<string, ToolStats> = {};
    for (const name of toolNames) {
      const s = map?.get(name);
      if (s !== undefined) out[name] = { ...s };
    }
    return out;
  }

  async add(tenant: string, deltas: Record<string, Partial<ToolStats>>): Promise<void> {
    let map = this.#tenants.get(tenant);
    if (map === undefined) this.#tenants.set(tenant, (map = new Map()));
    for (const [tool, d] of Object.entries(deltas)) {
      const s = map.get(tool) ?? { offloaded: 0, recalls: 0 };
      s.offloaded += Math.max(0, Math.trunc(d.offloaded ?? 0));
      s.recalls += Math.max(0, Math.trunc(d.recalls ?? 0));
      map.set(tool, s);
    }
  }
}
