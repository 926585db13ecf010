/**
 * `edge-offload/pricing`: what every decision is priced with, for tools and dashboards of one's own.
 * `offloadGate` is the net-saving gate (fire only when the saving over the horizon beats the stub's
 * carry, the cache invalidation and the expected recall hops); the price table resolves a model's
 * rates; token estimates, the structural index and the stub are the same the turn uses.
 *
 * @example
 * import { offloadGate } from "edge-offload/pricing";
 * const verdict = offloadGate({ model: "claude-opus-4-5", result_tokens: 321_000, stub_tokens: 300,
 *   horizon: 5, recall_probability: 0.5, cached_side: false, context_tokens: 9_000 });
 */
export type { GateInput } from "./core/gate.ts";
export { offloadGate, RECALL_OUTPUT_TOKENS_DEFAULT, RECALL_TOKENS_DEFAULT } from "./core/gate.ts";
export type { SessionLengths } from "./core/horizon.ts";
export { expectedRemainingCalls } from "./core/horizon.ts";
export { MEM_ID_PATTERN } from "./core/memid.ts";
export type { ModelPrice, Provider, Rates } from "./core/pricing.ts";
export { normalizeModelId, PRICE_TABLE, ratesFor, resolveModel } from "./core/pricing.ts";
export { normalizeJsonPath } from "./core/recall.ts";
export { MAX_QUESTIONS, QUERY_ANSWER_CHARS } from "./core/recall-many.ts";
export type { RecallToolDefinitions } from "./core/recall-tool.ts";
export { recallInputSchema } from "./core/recall-tool.ts";
export type { StructureIndex } from "./core/structure.ts";
export { structureOf } from "./core/structure.ts";
export { renderStub } from "./core/stub.ts";
export type { ContentKind } from "./core/tokens.ts";
export { CHARS_PER_TOKEN, detectKind, estimateTextTokens, estimateTokens } from "./core/tokens.ts";
export type { GateResult } from "./core/types.ts";
