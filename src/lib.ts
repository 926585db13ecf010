/**
 * edge-offload as a library: the runtime-agnostic core (no Workers APIs), usable from Node 20+,
 * Deno, Bun or a Worker. The Worker entry (src/index.ts) builds the HTTP service on the same
 * functions.
 *
 * - The turn: `compact` a provider request, `recall` a slice of what was offloaded, over an
 *   `OffloadStore` (`MemoryStore` keeps everything in the process; `edge-offload/store` has what a
 *   store of one's own is built from).
 * - The price of a decision: `offloadGate`, `resolveModel`, the price table, token estimates, and
 *   `expectedRemainingCalls` (the horizon a store's observed `session_lengths` give).
 * - Attachments: `extractText` and friends turn a file into text once; the typed errors all say
 *   "send it natively" (`fallback: "native"`).
 * - The tool-author kit: `defineTool`, `definePagedTool`, `paginate`, `previewOf` keep a tool's own
 *   output bounded on first delivery. The Hono helper for tool endpoints is a separate entry,
 *   `edge-offload/hono`.
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
} from "./config.ts";
export {
  DEFAULT_CONFIG,
  OffloadConfigPatchSchema,
  OffloadConfigSchema,
  parseConfigPatch,
  RECALL_HARD_CAP_CHARS,
  resolveConfig,
} from "./config.ts";
export { documentTokens, imageTokens, NATIVE_ESTIMATE } from "./core/attachments/text.ts";
export type { AttachmentDecision, AttachmentReport } from "./core/attachments/types.ts";
export { decodeBase64 } from "./core/bytes/base64.ts";
export type { ImageInfo } from "./core/bytes/image.ts";
export { imageInfo } from "./core/bytes/image.ts";
export type { CompactOutput } from "./core/compact.ts";
export { splice } from "./core/compact.ts";
export type { GateInput } from "./core/gate.ts";
export { offloadGate, RECALL_OUTPUT_TOKENS_DEFAULT, RECALL_TOKENS_DEFAULT } from "./core/gate.ts";
export type { SessionLengths } from "./core/horizon.ts";
export { expectedRemainingCalls } from "./core/horizon.ts";
export { MEM_ID_PATTERN } from "./core/memid.ts";
export type {
  AttachmentExtractor,
  CachedExtraction,
  CommitResult,
  ExtractedText,
  Extraction,
  ExtractionCache,
  ExtractionFailure,
  ExtractionInput,
  ExtractionRequest,
  OffloadStore,
  RecallStore,
  SessionSummary,
  ToolStats,
  Turn,
  TurnAsk,
  TurnCommit,
  TurnFinish,
  TurnStart,
} from "./core/ports.ts";
export type { ModelPrice, Provider, Rates } from "./core/pricing.ts";
export { normalizeModelId, PRICE_TABLE, ratesFor, resolveModel } from "./core/pricing.ts";
export type * from "./core/problems.ts";
export type {
  RecallAnswer,
  RecallAnswerMode,
  RecallArguments,
  RecallInput,
} from "./core/recall.ts";
export { normalizeJsonPath } from "./core/recall.ts";
export type { RecallManyInput } from "./core/recall-many.ts";
export { MAX_QUESTIONS, QUERY_ANSWER_CHARS, recallMany as recall } from "./core/recall-many.ts";
export type { RecallToolDefinitions, ToolFormat } from "./core/recall-tool.ts";
export { RECALL_TOOL_NAME, recallInputSchema, recallToolDefinition } from "./core/recall-tool.ts";
export type { SessionInput } from "./core/session.ts";
export { DEFAULT_TENANT, sessionRef } from "./core/session.ts";
export type { StructureIndex } from "./core/structure.ts";
export { structureOf } from "./core/structure.ts";
export { renderStub } from "./core/stub.ts";
export type { ContentKind } from "./core/tokens.ts";
export { CHARS_PER_TOKEN, detectKind, estimateTextTokens, estimateTokens } from "./core/tokens.ts";
export type { AnchorReport } from "./core/turn/anchor.ts";
export type { Decision } from "./core/turn/context.ts";
export type { CompactReport } from "./core/turn/report.ts";
export type * from "./core/types.ts";
export type { ErrorBody, ErrorIssue, OffloadErrorType } from "./errors.ts";
export { formatPath, isOffloadError, OffloadError, zodError } from "./errors.ts";
export type { AttachmentOptions } from "./extract/attachment-extractor.ts";
export { attachmentExtractor } from "./extract/attachment-extractor.ts";
export type {
  CachedExtractInput,
  CachedExtractOutput,
  ExtractionOutcome,
  Extractor,
} from "./extract/cache.ts";
export { extractCached, extractionCacheKey, isCacheableFailure } from "./extract/cache.ts";
export type {
  AttachmentErrorBody,
  AttachmentErrorType,
  AttachmentErrorWire,
  ExtractionFailureReason,
  MissingDependency,
} from "./extract/errors.ts";
export {
  AttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
  isAttachmentError,
  UnsupportedAttachmentError,
} from "./extract/errors.ts";
export type { ExtractTextsItem, ExtractTextsOptions } from "./extract/extract.ts";
export { extractText, extractTexts, isExtractable, probeAttachment } from "./extract/extract.ts";
export { htmlToText } from "./extract/html.ts";
export type { NormalizedAttachment } from "./extract/input.ts";
export { attachmentDigest, normalizeAttachment } from "./extract/input.ts";
export type {
  ModelBucket,
  OcrEngine,
  OcrImage,
  OcrModelSource,
  OcrOptions,
  OcrPixels,
  OcrRaster,
  OcrRunLimits,
  OcrText,
} from "./extract/ocr.ts";
export {
  bucketModelSource,
  bytesModelSource,
  DEFAULT_OCR_MAX_PIXELS,
  OCR_PEAK_BUDGET_BYTES,
  OCR_PEAK_BYTES_PER_PIXEL,
} from "./extract/ocr.ts";
export type { TesseractEngineOptions } from "./extract/ocr-tesseract.ts";
export { tesseractEngine } from "./extract/ocr-tesseract.ts";
export type {
  ExtractLimits,
  ExtractLimitsInput,
  ExtractOptions,
  ResolvedExtractOptions,
} from "./extract/options.ts";
export {
  DEFAULT_EXTRACT_LIMITS,
  ExtractLimitsSchema,
  extractionVariant,
  extractOptionsFromQuery,
  resolveExtractOptions,
} from "./extract/options.ts";
export type * from "./extract/types.ts";
export type { OffloadMiddlewareOptions } from "./integrations/ai-sdk.ts";
export { offloadMiddleware } from "./integrations/ai-sdk.ts";
export type { ModelCall } from "./integrations/ai-sdk-turn.ts";
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
export type { AgentStoreOptions } from "./store/agent.ts";
export { AgentStore } from "./store/agent.ts";
export type { MemoryStoreOptions } from "./store/memory.ts";
export { MemoryStore } from "./store/memory.ts";
export type { DurableStorage } from "./store/sql.ts";
export type { BodyBucket } from "./store/sql-ledger.ts";
export type {
  PagedInput,
  PagedToolSpec,
  PageShape,
  PageShapeOptions,
  RowsResult,
} from "./toolkit/paged.ts";
export { definePagedTool, pageShape } from "./toolkit/paged.ts";
export type { Page, PaginateOptions } from "./toolkit/paginate.ts";
export { PAGE_DEFAULTS, paginate } from "./toolkit/paginate.ts";
export type { PreviewOptions } from "./toolkit/preview.ts";
export { previewOf, serializeValue } from "./toolkit/preview.ts";
export type {
  AnthropicToolDefinition,
  AnthropicToolResult,
  OpenAIChatToolDefinition,
  OpenAIChatToolResult,
  OpenAIResponsesToolDefinition,
  OpenAIResponsesToolResult,
  Tool,
  ToolAnswer,
  ToolDefinitions,
  ToolInputSchema,
  ToolSpec,
} from "./toolkit/tool.ts";
export { defineTool, toolResult } from "./toolkit/tool.ts";
