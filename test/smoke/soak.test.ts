// The soak's short variant (`npm run soak` runs the long one): concurrent sessions replaying corpus turns
// against the real `wrangler dev`, with recalls and deletes; zero 5xx, zero lost bodies, deleted sessions
// unknown, and the Worker's heap flat across the run.
import { describe, expect, it } from "vitest";
import { printReport, soak } from "../../bench/soak.ts";

describe("soak (short)", () => {
  it("serves concurrent sessions for a while: no 5xx, nothing lost, deletes stick, heap flat", async () => {
    const report = await soak({ seconds: 20, sessions: 6, verbose: false });
    printReport(report);
    expect(report.calls.compact).toBeGreaterThan(50);
    expect(report.calls.delete).toBeGreaterThan(0);
    expect(report.server_errors).toBe(0);
    expect(report.failures).toEqual([]);
    expect(report.lost_bodies).toBe(0);
    expect(report.deleted_still_known).toBe(0);
    // Flat: the last third of the samples within half of the first third (GC'd each time).
    expect(report.heap_mb.length).toBeGreaterThanOrEqual(3);
    expect(report.heap_growth!).toBeLessThan(0.5);
  }, 120_000);
});
