/**
 * What a turn measures for the session report, kept apart from the transform: the net-saving gate's verdicts,
 * and the shadow-mode view of a turn's report (docs/measure.md).
 */
import type { CompactReport } from "./compact.ts";
import type { TurnDecision } from "./types.ts";

/**
 * The gate's verdicts on this turn: every decision taken now (not replayed) that consulted the gate. A declined
 * first delivery is not recorded, so it is consulted (and counted) again on each turn until it settles.
 */
export function gateVerdicts(decisions: readonly TurnDecision[]): {
  gate_fired: number;
  gate_declined: number;
} {
  let fired = 0;
  let declined = 0;
  for (const d of decisions) {
    if (d.sticky || d.gate === undefined) continue;
    if (d.gate.fire) fired++;
    else declined++;
  }
  return { gate_fired: fired, gate_declined: declined };
}

/**
 * A shadow turn's report: the counts, tokens and saving stay what offload decided (what it would have sent and
 * saved), and what describes the returned request is made true of it: no recall tool was added, no cache anchor
 * was placed.
 */
export function shadowReport(report: CompactReport, clientHasRecallTool: boolean): CompactReport {
  return {
    ...report,
    shadow: true,
    recall_tool: clientHasRecallTool ? "present" : "none",
    anchor:
      report.anchor === null
        ? null
        : { placed: false, ttl: null, reason: "shadow mode: the request is returned unchanged" },
  };
}
