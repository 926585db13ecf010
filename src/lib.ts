/**
 * edge-offload as a library: the runtime-agnostic core (no Workers APIs), usable from Node 22+, Deno, Bun or
 * a Worker. The Worker entry (src/index.ts) builds the HTTP service on top of the same functions.
 */

export type {
  OffloadConfig,
  OffloadConfigInput,
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
export { documentTokens, imageTokens, NATIVE_ESTIMATE } from "./core/attachment-text.ts";
export type {
  AttachmentDecision,
  AttachmentOptions,
  AttachmentReport,
} from "./core/attachments.ts";
export type {
  CompactError,
  CompactInput,
  CompactOutput,
  CompactReport,
  Decision,
} from "./core/compact.ts";
export { compact, splice } from "./core/compact.ts";
export type { GateInput } from "./core/gate.ts";
export { offloadGate, RECALL_OUTPUT_TOKENS_DEFAULT, RECALL_TOKENS_DEFAULT } from "./core/gate.ts";
export { MEM_ID_PATTERN } from "./core/memid.ts";
export type { ModelPrice, Provider, Rates } from "./core/pricing.ts";
export { normalizeModelId, PRICE_TABLE, ratesFor, resolveModel } from "./core/pricing.ts";
export type {
  RecallAnswer,
  RecallAnswerMode,
  RecallArguments,
  RecallInput,
} from "./core/recall.ts";
export { normalizeJsonPath } from "./core/recall.ts";
// `recall` answers a whole recall_tool_result call (queries and json_paths included): the multi-question
// front door over the single-question core.
export type { RecallManyInput } from "./core/recall-many.ts";
export {
  MAX_QUESTIONS,
  QUERY_ANSWER_CHARS,
  recallMany as recall,
} from "./core/recall-many.ts";
export type { RecallToolDefinitions, ToolFormat } from "./core/recall-tool.ts";
export { RECALL_TOOL_NAME, recallInputSchema, recallToolDefinition } from "./core/recall-tool.ts";
export type { SessionInput } from "./core/session.ts";
export { DEFAULT_TENANT, sessionRef } from "./core/session.ts";
export type { StructureIndex } from "./core/structure.ts";
export { structureOf } from "./core/structure.ts";
export { renderStub } from "./core/stub.ts";
export type { ContentKind } from "./core/tokens.ts";
export { CHARS_PER_TOKEN, detectKind, estimateTextTokens, estimateTokens } from "./core/tokens.ts";
export type * from "./core/types.ts";
export type { OffloadErrorType } from "./errors.ts";
export { isOffloadError, OffloadError } from "./errors.ts";
export type {
  CachedExtractInput,
  CachedExtraction,
  CachedExtractOutput,
  ExtractionCache,
  Extractor,
} from "./extract/cache.ts";
export { extractCached, extractionCacheKey, isCacheableFailure } from "./extract/cache.ts";
export type {
  AttachmentErrorBody,
  AttachmentErrorType,
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
// Attachments (seed 002 §3): extract text once, fall back to sending natively.
export { extractText, extractTexts, isExtractable, probeAttachment } from "./extract/extract.ts";
export { htmlToText } from "./extract/html.ts";
export type { ImageInfo } from "./extract/image.ts";
export { imageInfo } from "./extract/image.ts";
export type { NormalizedAttachment } from "./extract/input.ts";
export { attachmentDigest, decodeBase64, normalizeAttachment } from "./extract/input.ts";
export type {
  ModelBucket,
  OcrEngine,
  OcrImage,
  OcrModelSource,
  OcrOptions,
} from "./extract/ocr.ts";
export { bucketModelSource, bytesModelSource, DEFAULT_OCR_MAX_PIXELS } from "./extract/ocr.ts";
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
export { MemoryStore } from "./store/memory.ts";
export type {
  CommitResult,
  LoadedState,
  OffloadStore,
  SessionSummary,
  TurnCommit,
} from "./store/port.ts";
export type {
  PagedInput,
  PagedToolSpec,
  PageShape,
  PageShapeOptions,
  RowsResult,
} from "./toolkit/paged.ts";
export { definePagedTool, pageShape } from "./toolkit/paged.ts";
export type { Page, PaginateOptions } from "./toolkit/paginate.ts";
// Tool-author kit (seed 002 §2): bounded pages and previews so a tool does not flood the context on first delivery.
// The Hono helper for tool endpoints is a separate entry, `edge-offload/hono` (src/toolkit/hono.ts).
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
