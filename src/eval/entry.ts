/**
 * `edge-offload/eval`: the A/B eval of the model's answers with offload off and on, for a CI or a
 * script (the CLI's `edge-offload eval` runs the same). Node (or Deno, Bun): `fileLog` keeps the
 * results in a file a later run resumes from.
 *
 * @example
 * import { evaluate, fileLog, parseSessions, renderTable } from "edge-offload/eval";
 * const sessions = parseSessions(readFileSync("sessions.jsonl", "utf8"), "sessions.jsonl");
 * const report = await evaluate({
 *   sessions, provider: "anthropic", model: "claude-sonnet-4-6",
 *   apiKey: process.env.ANTHROPIC_API_KEY!, maxUsd: 2, log: fileLog("eval.jsonl"),
 * });
 * console.log(renderTable(report));
 */
export { parseSessions } from "../replay/sessions.ts";
export type { ReplaySession } from "../replay/types.ts";
export type { EvalOptions, EvalPlan, EvalProgress } from "./evaluate.ts";
export { evaluate, planEval } from "./evaluate.ts";
export { renderHtml } from "./report-html.ts";
export { fileLog } from "./results-file.ts";
export type { EvalLog } from "./results-log.ts";
export { memoryLog } from "./results-log.ts";
export type { Difference, Verdict } from "./stats.ts";
export type { Agreement, Disagreement, EvalReport, EvalSettings } from "./summary.ts";
export { renderPlan, renderTable } from "./table.ts";
export type * from "./types.ts";
export { EVAL_PROVIDERS } from "./types.ts";
