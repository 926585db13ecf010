/** Contract of the tenant learning-statistics port (the TenantDO and its in-memory twin). */
import { describe, expect, it } from "vitest";
import type { TenantStatsPort } from "../../src/store/ports.ts";

let n = 0;
const tenant = () => `stats-${Date.now().toString(36)}-${++n}`;

export function runTenantStatsContract(
  name: string,
  make: () => TenantStatsPort | Promise<TenantStatsPort>,
): void {
  describe(`tenant-stats contract: ${name}`, () => {
    it("reads an unknown tenant or tool as no counts", async () => {
      const s = await make();
      expect(await s.load(tenant(), ["bash"])).toEqual({});
      expect(await s.load(tenant(), [])).toEqual({});
    });

    it("adds counts per tool, only for the tenant, and returns the asked tools", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { bash: { offloaded: 2 }, read: { recalls: 1 } });
      await s.add(t, { bash: { recalls: 3, offloaded: 1 } });
      await Promise.all([
        s.add(t, { read: { offloaded: 1 } }),
        s.add(t, { read: { offloaded: 1 } }),
      ]);
      expect(await s.load(t, ["bash", "read", "grep"])).toEqual({
        bash: { offloaded: 3, recalls: 3 },
        read: { offloaded: 2, recalls: 1 },
      });
      expect(await s.load(t, ["read"])).toEqual({ read: { offloaded: 2, recalls: 1 } });
      expect(await s.load(tenant(), ["bash"])).toEqual({});
    });

    it("ignores negative and fractional deltas instead of corrupting counts", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { bash: { offloaded: 2 } });
      await s.add(t, { bash: { offloaded: -5, recalls: 1.7 } });
      expect(await s.load(t, ["bash"])).toEqual({ bash: { offloaded: 2, recalls: 1 } });
    });
  });
}
