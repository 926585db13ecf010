/**
 * edge-offload for Cloudflare Agents (`edge-offload/agents`): the store that lives in the agent's own
 * Durable Object, the AI SDK middleware to use it with in `onChatMessage`, and the session's report.
 */

export type { SessionReport } from "../report.ts";
export { sessionReport } from "../report.ts";
export type { AgentStoreOptions } from "../store/agent.ts";
export { AgentStore } from "../store/agent.ts";
export type { DurableStorage } from "../store/sql.ts";
export type { BodyBucket } from "../store/sql-ledger.ts";
export type { OffloadMiddlewareOptions } from "./ai-sdk.ts";
export { offloadMiddleware } from "./ai-sdk.ts";
export type { OffloadCallReport, OffloadProblem } from "./options.ts";
