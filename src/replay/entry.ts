/**
 * `edge-offload/replay`: the cost replay the CLI's `edge-offload replay` runs, for a script or a CI.
 * Sessions are replayed call by call and every call priced under each policy with a prompt-cache
 * simulation; the `edge-offload` policies run the real `compact` and `recall` (tool rules included),
 * the others are the field's recipes.
 *
 * @example
 * import { DEFAULT_POLICIES, parseSessions, policyByName, renderTable, replay } from "edge-offload/replay";
 * const sessions = parseSessions(readFileSync("sessions.jsonl", "utf8"), "sessions.jsonl");
 * const policies = DEFAULT_POLICIES.map((name) => policyByName(name)!);
 * console.log(renderTable(await replay(sessions, { model: "claude-sonnet-4-6", client: "cached", policies })));
 */
export { earlyEndings } from "./endings.ts";
export type { GapModel } from "./gaps.ts";
export { parseGapModel } from "./gaps.ts";
export { edgeOffload as edgeOffloadPolicy } from "./policies/edge-offload.ts";
export { DEFAULT_POLICIES, policyByName } from "./policies/index.ts";
export type { Policy, PolicyContext, PolicyRun, Recovery } from "./policy.ts";
export { renderTable, toJson } from "./report.ts";
export type { HopExchange, ReplayOptions } from "./run.ts";
export { replay } from "./run.ts";
export { parseSessions } from "./sessions.ts";
export type * from "./types.ts";
