/**
 * Calibration with scripted usage: a "provider" that counts each class of content at its own ratio of the
 * estimate; the ratios are learned per class, bounded and damped, used only once enough turns were measured,
 * and then by the gate; the estimates' error is reported before and after.
 */
import { describe, expect, it } from "vitest";
import {
  CALIBRATION_BOUNDS,
  CALIBRATION_MIN_TURNS,
  calibrate,
  calibratedTokens,
  calibrationErrors,
  ratioOf,
  resultRatio,
} from "../../src/core/calibration.ts";
import { compact } from "../../src/core/compact.ts";
import { whitespaceShare } from "../../src/core/tokens.ts";
import { billedTurns } from "../../src/store/billing-report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { startOf } from "../support/records.ts";
import { conversation, jsonBody, textBody } from "../support/requests.ts";

/** The scripted provider: JSON at 0.75 of the estimate, everything else at 1.2. */
const TRUE: Record<string, number> = { json: 0.75, request: 1.2 };
const measure = (est: Record<string, number>) =>
  Math.round(
    Object.entries(est).reduce(
      (n, [c, t]) => n + t * (c.endsWith("~ws") ? 0 : (TRUE[c] ?? 1.2)),
      0,
    ),
  );

describe("calibrate (pure)", () => {
  it("learns each class's ratio from turns of different mixes, and reports the error it removed", () => {
    let c = null as ReturnType<typeof calibrate> | null;
    for (let i = 0; i < 40; i++) {
      const est = { json: 2_000 + ((i * 3_700) % 20_000), request: 3_000 + ((i * 1_300) % 9_000) };
      c = calibrate(c, est, measure(est));
    }
    expect(c!.turns).toBe(40);
    expect(ratioOf(c, "json")).toBeCloseTo(0.75, 2);
    expect(ratioOf(c, "request")).toBeCloseTo(1.2, 2);
    // A class never seen is read at the request's ratio.
    expect(ratioOf(c, "csv")).toBeCloseTo(1.2, 2);
    const err = calibrationErrors(c);
    expect(err.error_raw).toBeGreaterThan(0.05);
    expect(err.error_calibrated!).toBeLessThan(err.error_raw! / 5);
    expect(Math.abs(err.bias_calibrated!)).toBeLessThan(Math.abs(err.bias_raw!));
  });

  it("learns a kind's slope with whitespace: indented JSON packs more chars per token", () => {
    // The scripted provider: JSON at 0.9 − 1.0 · (ws − 0.2), everything else at 1.
    let c = null as ReturnType<typeof calibrate> | null;
    for (let i = 0; i < 30; i++) {
      const json = 5_000 + ((i * 2_900) % 15_000);
      const ws = [0.05, 0.2, 0.35, 0.45][i % 4]!;
      const request = 2_000 + ((i * 700) % 3_000);
      const truth = json * (0.9 - 1.0 * (ws - 0.2)) + request;
      c = calibrate(c, { json, "json~ws": json * (ws - 0.2), request }, Math.round(truth));
    }
    expect(resultRatio(c, "json", 0.45)).toBeCloseTo(0.65, 2);
    expect(resultRatio(c, "json", 0.05)).toBeCloseTo(1.05, 2);
    expect(resultRatio(c, "json", undefined)).toBeCloseTo(0.9, 2);
  });

  it("is not used before enough turns, and never leaves its bounds", () => {
    let c = null as ReturnType<typeof calibrate> | null;
    for (let i = 0; i < CALIBRATION_MIN_TURNS - 1; i++) c = calibrate(c, { request: 1000 }, 1500);
    expect(c!.turns).toBe(CALIBRATION_MIN_TURNS - 1);
    expect(ratioOf(c, "request")).toBe(1); // learned, not used yet
    expect(calibratedTokens(c, { request: 1000 })).toBe(1000);
    c = calibrate(c, { request: 1000 }, 1500);
    expect(ratioOf(c, "request")).toBeGreaterThan(1.3);
    // Each step moves half the error: one odd turn cannot swing it to its value.
    const before = ratioOf(c, "request");
    const odd = calibrate(c, { request: 1000 }, 3_900);
    expect(ratioOf(odd, "request") - before).toBeLessThan((3.9 - before) * 0.51);
    for (let i = 0; i < 30; i++) c = calibrate(c, { request: 1000 }, 3_900);
    expect(ratioOf(c, "request")).toBe(CALIBRATION_BOUNDS.max);
  });

  it("ignores what it cannot attribute: no estimate, no measure, or not the same request", () => {
    const c = calibrate(null, { request: 1000 }, 1100);
    expect(calibrate(c, {}, 500)).toEqual(c);
    expect(calibrate(c, { request: 1000 }, 0)).toEqual(c);
    expect(calibrate(c, { request: 1000 }, 5_000)).toEqual(c);
    expect(calibrate(c, { request: 1000 }, 200)).toEqual(c);
    expect(calibrate(c, { request: Number.NaN, json: -5 }, 1000)).toEqual(c);
  });
});

describe("calibration through the store and the gate", () => {
  const model = "claude-sonnet-4-6";
  const config = {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_recall_tool_declaration: "eager" as const,
    tool_result_compaction_keep_last_n: 1,
  };
  const request = (n: number) =>
    conversation(
      Array.from({ length: n }, (_, i) => ({
        id: `t${i}`,
        result: i % 2 === 0 ? jsonBody(8_000 + i * 500) : textBody(3_000 + i * 300),
      })),
      { model },
    );

  it("learns from posted usage per tenant and model, then the gate prices calibrated tokens", async () => {
    const store = new MemoryStore();
    const ref = { tenant: "acme", session: "cal-1" };
    for (let n = 1; n <= CALIBRATION_MIN_TURNS + 3; n++) {
      const out = await compact({ request: request(n), session: ref, store, config });
      const est = out.report.estimate!;
      expect(est.calibrated).toBe(n > CALIBRATION_MIN_TURNS);
      const outcome = await store.recordUsage(
        ref,
        { turn: out.report.turn },
        {
          source: "client",
          model,
          calls: 1,
          tokens: {
            input: measure(est.sent),
            cache_read: 0,
            cache_write_5m: 0,
            cache_write_1h: 0,
            output: 10,
          },
          first: {
            input: measure(est.sent),
            cache_read: 0,
            cache_write_5m: 0,
            cache_write_1h: 0,
            output: 10,
          },
          answer_output: 10,
        },
      );
      expect(outcome?.status).toBe("recorded");
    }
    // The session learned its own calibration, and the tenant's learned the same turns.
    const cal = (await startOf(store, ref)).calibrations[model]!;
    expect(cal.turns).toBe(CALIBRATION_MIN_TURNS + 3);
    expect(ratioOf(cal, "request")).toBeGreaterThan(1.05);
    expect((await store.calibrations("acme"))[model]).toEqual(cal);
    // Another session of the tenant starts calibrated (the tenant's); another tenant does not.
    expect(
      (await startOf(store, { tenant: "acme", session: "other" })).calibrations[model],
    ).toEqual(cal);
    expect(
      (await startOf(store, { tenant: "globex", session: "cal-1" })).calibrations[model],
    ).toBeUndefined();

    // The gate is asked about provider tokens: the JSON result at the json ratio.
    const next = await compact({
      request: conversation(
        [
          { id: "big", result: jsonBody(90_000) },
          { id: "tail", result: "ok" },
        ],
        { model },
      ),
      session: { tenant: "acme", session: "fresh" },
      store,
      config,
    });
    const big = next.decisions.find((d) => d.tool_use_id === "big")!;
    const ws = whitespaceShare(jsonBody(90_000));
    expect(big.gate!.inputs.result_tokens).toBe(
      Math.round(big.tokens * resultRatio(cal, "json", ws)),
    );
    expect(next.report.estimate!.calibrated).toBe(true);

    // The session's report: estimate error before and after calibration on its own measured turns.
    const data = (await store.sessionReport(ref))!;
    const err = data.totals.billed.estimate_error;
    expect(err.turns).toBe(CALIBRATION_MIN_TURNS + 3);
    expect(err.error_calibrated!).toBeLessThan(err.error_raw!);
    expect(billedTurns(data.turns).every((b) => b !== null)).toBe(true);
  });
});
