/** Contract of the calibration port (the TenantDO's calibration table and its in-memory twin). */
import { describe, expect, it } from "vitest";
import { CALIBRATION_MIN_TURNS, calibrate, ratioOf } from "../../src/core/calibration.ts";
import type { CalibrationPort } from "../../src/store/ports.ts";

let n = 0;
const tenant = () => `cal-${Date.now().toString(36)}-${++n}`;

export function runCalibrationContract(
  name: string,
  make: () => Required<CalibrationPort> | Promise<Required<CalibrationPort>>,
): void {
  describe(`calibration contract: ${name}`, () => {
    it("reads an unknown tenant or model as none", async () => {
      const s = await make();
      expect(await s.get(tenant(), "claude-sonnet-4-6")).toBeNull();
      expect(await s.all(tenant())).toEqual({});
    });

    it("learns turn by turn with the one rule, per tenant and model, atomically", async () => {
      const s = await make();
      const t = tenant();
      let expected = null as ReturnType<typeof calibrate> | null;
      for (let i = 0; i < CALIBRATION_MIN_TURNS + 1; i++) {
        const est = { json: 1000 + i * 400, request: 500 + i * 50 };
        const measured = Math.round(est.json * 0.8 + est.request * 1.1);
        expected = calibrate(expected, est, measured);
        expect(await s.learn(t, "claude-sonnet-4-6", est, measured)).toEqual(expected);
      }
      expect(await s.get(t, "claude-sonnet-4-6")).toEqual(expected);
      expect(ratioOf(expected, "json")).toBeLessThan(1);
      // Another model, another tenant: their own.
      expect(await s.get(t, "gpt-4.1")).toBeNull();
      expect(await s.get(tenant(), "claude-sonnet-4-6")).toBeNull();
      await s.learn(t, "gpt-4.1", { request: 100 }, 120);
      expect(Object.keys(await s.all(t)).sort()).toEqual(["claude-sonnet-4-6", "gpt-4.1"]);
      // Concurrent turns are each learned once.
      const u = tenant();
      await Promise.all(
        Array.from({ length: 4 }, () => s.learn(u, "gpt-4.1", { request: 100 }, 110)),
      );
      expect((await s.get(u, "gpt-4.1"))!.turns).toBe(4);
    });

    it("hands out copies", async () => {
      const s = await make();
      const t = tenant();
      const got = await s.learn(t, "gpt-4.1", { request: 100 }, 120);
      got.ratios.request = 99;
      expect((await s.get(t, "gpt-4.1"))!.ratios.request).not.toBe(99);
    });
  });
}
