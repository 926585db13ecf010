/**
 * Contract of the tenant's learning (`TenantLearning`: the TenantDO, the SQL class on node:sqlite, the
 * in-memory twin): offloads and recalls per tool and the calibration per model, summed over the tenant's
 * sessions, and the ended sessions' lengths as a bucketed histogram that follows the last ~1,000; each
 * addition applied once.
 */
import { describe, expect, it } from "vitest";
import { CALIBRATION_MIN_TURNS, calibrate, ratioOf } from "../core/calibration.ts";
import type { TenantLearning } from "../store/ports.ts";
import { ENDED_PER_ADD, LENGTHS_WINDOW, RESCALE_AFTER } from "../store/session-lengths.ts";

/** What n sessions weigh together, the latest weighing 1 and each earlier one e^(-1/W) less. */
const fading = (n: number) =>
  (1 - Math.exp(-n / LENGTHS_WINDOW)) / (1 - Math.exp(-1 / LENGTHS_WINDOW));

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

    it("keeps the ended sessions' lengths: a histogram per tenant, long ones bucketed, bad ones ignored", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { tools: { bash: { offloaded: 1 } } });
      expect((await s.read(t)).session_lengths).toBeUndefined(); // no session ended yet
      await s.add(t, { ended: [3, 12, 3] });
      await s.add(t, { ended: [200, 201, 237, 4_321, 5_000_000] });
      await s.add(t, { ended: [0, -4, 2.5, Number.NaN, Number.POSITIVE_INFINITY] });
      await Promise.all([s.add(t, { ended: [12] }), s.add(t, { ended: [12] })]);
      expect((await s.read(t)).session_lengths).toEqual({
        counts: [
          [3, 2],
          [12, 3],
          [200, 2], // 201 is counted at 200: a long session's length rounds down, never up
          [230, 1],
          [4_300, 1],
          [1_000_000, 1],
        ],
      });
      expect((await s.read(tenant())).session_lengths).toBeUndefined();
      // An addition takes its latest ENDED_PER_ADD lengths only.
      const u = tenant();
      await s.add(u, { ended: [...Array(ENDED_PER_ADD).fill(9), 8] });
      expect((await s.read(u)).session_lengths).toEqual({
        counts: [
          [8, 1],
          // each earlier session weighs e^(-1/W) less than the next
          [9, Math.round(fading(ENDED_PER_ADD) - 1)],
        ],
      });
    });

    it("follows the last ~1,000 ended sessions: older ones fade, also across a rescale", async () => {
      const s = await make();
      const t = tenant();
      await s.add(t, { ended: [5] });
      const batch = Array(ENDED_PER_ADD).fill(40) as number[];
      const added = async (sessions: number) => {
        for (let i = 0; i < sessions; i += ENDED_PER_ADD) await s.add(t, { ended: batch });
      };
      await added(2 * LENGTHS_WINDOW);
      // The first session now weighs e^-2.048 < 0.5: gone; the j-th latest weighs e^(-j/W).
      const n = Math.ceil((2 * LENGTHS_WINDOW) / ENDED_PER_ADD) * ENDED_PER_ADD;
      expect((await s.read(t)).session_lengths).toEqual({ counts: [[40, Math.round(fading(n))]] });
      // Past RESCALE_AFTER sessions the weights are brought back to scale: the same histogram.
      await added(RESCALE_AFTER);
      await s.add(t, { ended: [7] });
      const read = (await s.read(t)).session_lengths!;
      expect(read.counts[0]).toEqual([7, 1]);
      expect(read.counts[1]![0]).toBe(40);
      expect(Math.abs(read.counts[1]![1] - fading(Number.POSITIVE_INFINITY))).toBeLessThanOrEqual(
        1,
      );
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
