/**
 * `edge-offload`: the library's root, what an agent backend calls. Runtime-agnostic (no Workers
 * APIs): Node 20+, Deno, Bun or a Worker. The Worker entry (src/index.ts) builds the HTTP service
 * on the same functions.
 *
 * - The turn: `compact` a provider request, `recall` a slice of what was offloaded, `sessionReport`
 *   what a session saved, over a store (`MemoryStore` in the process, `AgentStore` in a Cloudflare
 *   Agent's own Durable Object).
 * - In process, the proxy's whole behaviour: `offloadFetch`, a fetch for the official SDKs (the AI SDK's
 *   `offloadMiddleware` is on `edge-offload/ai-sdk`: its types are the optional `ai` peer's, and the
 *   root's must compile without it).
 * - The config (one schema, its defaults, per-tool rules) and the one error type.
 *
 * The rest is on subpaths: `edge-offload/extract` (attachments and OCR), `edge-offload/toolkit` and
 * `edge-offload/hono` (tools that bound their own output), `edge-offload/pricing` (the gate, the
 * price table, token estimates, stubs), `edge-offload/store` (the ports a store of one's own
 * implements), `edge-offload/replay` and `edge-offload/eval` (measuring), and `edge-offload/fetch`,
 * `edge-offload/ai-sdk` (`offloadMiddleware`), `edge-offload/agents` (each integration alone).
 */
import type { OffloadConfigLike } from "./config.ts";
import type { CompactOutput, CompactInput as TurnInput } from "./core/compact.ts";
import { type AttachmentOptions, attachmentExtractor } from "./extract/attachment-extractor.ts";
import { guardedCompact } from "./secret-guard.ts";
import { deadlineOf, withDeadline } from "./store/deadline.ts";

export interface CompactInput<
  R extends string | object,
  C extends OffloadConfigLike = OffloadConfigLike,
> extends TurnInput<R, C> {
  /** OCR and the extractor for the attachment policy, when `extractor` is not given. */
  attachments?: AttachmentOptions | undefined;
  /**
   * How long one store call may take (ms, default 5,000; Infinity: no bound): a store that does not
   * answer in time fails that call as a `storage_error` (the request then passes through, or the
   * result stays full), reported in `report.errors`.
   */
  storeTimeoutMs?: number | undefined;
}

/**
 * Compacts one turn of a provider request: settled tool results the size tiers and the net-saving
 * gate select are replaced by stubs (their bodies first made durable in the store), earlier
 * decisions are replayed byte for byte, and with nothing to change (or compaction off, the default)
 * the very same value comes back. Attachments are extracted with the default extractor when
 * `attachment_policy` asks for it.
 *
 * @example
 * const store = new MemoryStore();
 * const out = await compact({
 *   request, // an Anthropic Messages request, parsed or as JSON text
 *   session: "chat-42",
 *   store,
 *   config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
 * });
 * await anthropic.messages.create(out.request); // out.report says what was saved, and why
 */
export function compact<R extends string | object, C extends OffloadConfigLike = OffloadConfigLike>(
  input: CompactInput<R, C>,
): Promise<CompactOutput<R>> {
  const { attachments, storeTimeoutMs, ...turn } = input;
  const ms = deadlineOf(storeTimeoutMs, "storeTimeoutMs");
  return guarded<R, C>({
    ...turn,
    ...(turn.store === undefined ? {} : { store: withDeadline(turn.store, ms) }),
    extractor: turn.extractor ?? attachmentExtractor(attachments),
  });
}

/** Warns once per process about the development secret on a shared store (secret-guard.ts). */
const guarded = guardedCompact();

export type {
  CheckedConfig,
  OffloadConfig,
  OffloadConfigInput,
  OffloadConfigLike,
  OffloadConfigPatch,
  RecallMode,
  ToolRule,
} from "./config.ts";
export {
  DEFAULT_CONFIG,
  OffloadConfigPatchSchema,
  OffloadConfigSchema,
  parseConfigPatch,
  RECALL_HARD_CAP_CHARS,
  RECOMMENDED_CONFIG,
  resolveConfig,
  ToolRuleSchema,
} from "./config.ts";
export type { AttachmentDecision, AttachmentReport } from "./core/attachments/types.ts";
export type { CompactOutput } from "./core/compact.ts";
export type { AttachmentExtractor } from "./core/ports.ts";
export type * from "./core/problems.ts";
export type {
  RecallAnswer,
  RecallAnswerMode,
  RecallArguments,
  RecallInput,
} from "./core/recall.ts";
export type { RecallManyInput } from "./core/recall-many.ts";
export { recallMany as recall } from "./core/recall-many.ts";
export type { RecallToolDefinitions, ToolFormat } from "./core/recall-tool.ts";
export { RECALL_TOOL_NAME, recallToolDefinition } from "./core/recall-tool.ts";
export type { SessionInput } from "./core/session.ts";
export { DEFAULT_TENANT } from "./core/session.ts";
export type { AnchorReport } from "./core/turn/anchor.ts";
export type { Decision } from "./core/turn/context.ts";
export type { PressureReport } from "./core/turn/pressure.ts";
export type { CompactReport } from "./core/turn/report.ts";
export type { ToolRuleCount } from "./core/turn/tool-rules.ts";
export type {
  Action,
  Format,
  GateResult,
  SessionRef,
  Tier,
  TurnDecision,
} from "./core/types.ts";
export type { ErrorBody, ErrorIssue, OffloadErrorType } from "./errors.ts";
export { isOffloadError, OffloadError } from "./errors.ts";
export type { AttachmentOptions } from "./extract/attachment-extractor.ts";
export type { ProxySummary, Summary } from "./http/summary.ts";
export type { OffloadFetchOptions } from "./integrations/fetch.ts";
export { offloadFetch } from "./integrations/fetch.ts";
export type {
  InProcessOptions,
  InProcessStore,
  OffloadCallReport,
  OffloadProblem,
  PassThroughProblem,
  SessionOf,
} from "./integrations/options.ts";
export type { ReportingStore, SessionReport } from "./report.ts";
export { sessionReport } from "./report.ts";
export type { AgentStoreOptions } from "./store/agent.ts";
export { AgentStore } from "./store/agent.ts";
export type { MemoryStoreOptions } from "./store/memory.ts";
export { MemoryStore } from "./store/memory.ts";
export type { DurableStorage } from "./store/sql.ts";
export type { BodyBucket } from "./store/sql-ledger.ts";
