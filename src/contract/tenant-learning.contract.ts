/**
 * Contract of the tenant's learning (`TenantLearning`: the TenantDO, the SQL class on node:sqlite, the
 * in-memory twin): offloads and recalls per tool and the calibration per model, summed over the tenant's
 * sessions, each addition applied once.
 */
import { describe, expect, it } from "vitest";
import { CALIBRATION_MIN_TURNS, calibrate, ratioOf } from "../core/calibration.ts";
import type { TenantLearning } from "../store/ports.ts";

let n = 0;
const tenant = () => `learning-${Date.now().toString(36)}-${++n}`;

/** The tenant's learning's contract (`TenantLearning`), as vitest cases: a fresh port per case from `make`. */
export function runTenantLearningContract(
  name: string,
  make: () => TenantLearning | Promise<TenantLearning>,
): void {
  describe(`tenant-learning contract: ${name}`, () => {
    it("reads an unknown tenant as nothing learned", async () => {
      const s = await make();
      expect(await s.read(tenant())).toEqual({ tools: {}, calibrations: {} });
    });

    it("adds counts per tool, only for the tenant, concurrent additions each once", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { tools: { bash: { offloaded: 2 }, read: { recalls: 1 } } });
      await s.add(t, { tools: { bash: { recalls: 3, offloaded: 1 } } });
      await Promise.all([
        s.add(t, { tools: { read: { offloaded: 1 } } }),
        s.add(t, { tools: { read: { offloaded: 1 } } }),
      ]);
      expect((await s.read(t)).tools).toEqual({
        bash: { offloaded: 3, recalls: 3 },
        read: { offloaded: 2, recalls: 1 },
      });
      expect((await s.read(tenant())).tools).toEqual({});
    });

    it("ignores negative and fractional deltas instead of corrupting counts", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { tools: { bash: { offloaded: 2 } } });
      await s.add(t, { tools: { bash: { offloaded: -5, recalls: 1.7 } } });
      expect((await s.read(t)).tools).toEqual({ bash: { offloaded: 2, recalls: 1 } });
    });

    it("learns calibration samples in order with the one rule, per tenant and model", async () => {
      const s = await make();
      const t = tenant();
      let expected = null as ReturnType<typeof calibrate> | null;
      const samples = Array.from({ length: CALIBRATION_MIN_TURNS + 1 }, (_, i) => {
        const estimate = { json: 1000 + i * 400, request: 500 + i * 50 };
        const measured = Math.round(estimate.json * 0.8 + estimate.request * 1.1);
        expected = calibrate(expected, estimate, measured);
        return { model: "claude-sonnet-4-6", estimate, measured };
      });
      await s.add(t, { samples: samples.slice(0, 2) });
      for (const sample of samples.slice(2)) await s.add(t, { samples: [sample] });
      const read = await s.read(t);
      expect(read.calibrations["claude-sonnet-4-6"]).toEqual(expected);
      expect(ratioOf(expected, "json")).toBeLessThan(1);
      // Another model, another tenant: their own.
      await s.add(t, {
        samples: [{ model: "gpt-4.1", estimate: { request: 100 }, measured: 120 }],
      });
      expect(Object.keys((await s.read(t)).calibrations).sort()).toEqual([
        "claude-sonnet-4-6",
        "gpt-4.1",
      ]);
      expect((await s.read(tenant())).calibrations).toEqual({});
      // Concurrent turns are each learned once.
      const u = tenant();
      await Promise.all(
        Array.from({ length: 4 }, () =>
          s.add(u, { samples: [{ model: "gpt-4.1", estimate: { request: 100 }, measured: 110 }] }),
        ),
      );
      expect((await s.read(u)).calibrations["gpt-4.1"]!.turns).toBe(4);
    });

    it("hands out copies", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, {
        tools: { bash: { offloaded: 1 } },
        samples: [{ model: "gpt-4.1", estimate: { request: 100 }, measured: 120 }],
      });
      const got = await s.read(t);
      got.calibrations["gpt-4.1"]!.ratios.request = 99;
      got.tools.bash!.offloaded = 99;
      const again = await s.read(t);
      expect(again.calibrations["gpt-4.1"]!.ratios.request).not.toBe(99);
      expect(again.tools.bash!.offloaded).toBe(1);
    });
  });
}
