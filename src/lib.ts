/**
 * edge-offload as a library: the runtime-agnostic core (no Workers APIs), usable from Node 22+, Deno, Bun or
 * a Worker. The Worker entry (src/index.ts) builds the HTTP service on top of the same functions.
 */
export { compact, splice } from "./core/compact.ts";
export type { CompactInput, CompactOutput, CompactReport, CompactError, Decision } from "./core/compact.ts";
export type { AttachmentOptions, AttachmentReport, AttachmentDecision } from "./core/attachments.ts";
export { imageTokens, documentTokens, NATIVE_ESTIMATE } from "./core/attachment-text.ts";
export { recall, normalizeJsonPath } from "./core/recall.ts";
export type { RecallInput, RecallArguments, RecallAnswer, RecallAnswerMode } from "./core/recall.ts";
export { offloadGate, RECALL_TOKENS_DEFAULT, RECALL_OUTPUT_TOKENS_DEFAULT } from "./core/gate.ts";
export type { GateInput } from "./core/gate.ts";
export { recallToolDefinition, recallInputSchema, RECALL_TOOL_NAME } from "./core/recall-tool.ts";
export type { ToolFormat, RecallToolDefinitions } from "./core/recall-tool.ts";
export { PRICE_TABLE, resolveModel, normalizeModelId, ratesFor } from "./core/pricing.ts";
export type { ModelPrice, Rates, Provider } from "./core/pricing.ts";
export { estimateTokens, estimateTextTokens, detectKind, CHARS_PER_TOKEN } from "./core/tokens.ts";
export type { ContentKind } from "./core/tokens.ts";
export { structureOf } from "./core/structure.ts";
export type { StructureIndex } from "./core/structure.ts";
export { renderStub } from "./core/stub.ts";
export { sessionRef, DEFAULT_TENANT } from "./core/session.ts";
export type { SessionInput } from "./core/session.ts";
export { MEM_ID_PATTERN } from "./core/memid.ts";
export type * from "./core/types.ts";
export { MemoryStore } from "./store/memory.ts";
export type { OffloadStore, LoadedState, TurnCommit, CommitResult, SessionSummary } from "./store/port.ts";
export { OffloadConfigSchema, OffloadConfigPatchSchema, DEFAULT_CONFIG, resolveConfig, parseConfigPatch, RECALL_HARD_CAP_CHARS } from "./config.ts";
export type { OffloadConfig, OffloadConfigInput, OffloadConfigPatch, RecallMode } from "./config.ts";
export { OffloadError, isOffloadError } from "./errors.ts";
export type { OffloadErrorType } from "./errors.ts";
// Tool-author kit (seed 002 §2): bounded pages and previews so a tool does not flood the context on first delivery.
// The Hono helper for tool endpoints is a separate entry, `edge-offload/hono` (src/toolkit/hono.ts).
export { paginate, PAGE_DEFAULTS } from "./toolkit/paginate.ts";
export type { Page, PaginateOptions } from "./toolkit/paginate.ts";
export { previewOf, serializeValue } from "./toolkit/preview.ts";
export type { PreviewOptions } from "./toolkit/preview.ts";
export { defineTool, toolResult } from "./toolkit/tool.ts";
export type { Tool, ToolSpec, ToolAnswer, ToolDefinitions, ToolInputSchema, AnthropicToolDefinition, OpenAIChatToolDefinition, OpenAIResponsesToolDefinition, AnthropicToolResult, OpenAIChatToolResult, OpenAIResponsesToolResult } from "./toolkit/tool.ts";
export { definePagedTool, pageShape } from "./toolkit/paged.ts";
export type { PagedToolSpec, PageShapeOptions, PageShape, PagedInput, RowsResult } from "./toolkit/paged.ts";
// Attachments (seed 002 §3): extract text once, fall back to sending natively.
export { extractText, extractTexts, isExtractable, probeAttachment } from "./extract/extract.ts";
export type { ExtractTextsItem, ExtractTextsOptions } from "./extract/extract.ts";
export {
  AttachmentError,
  UnsupportedAttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
  isAttachmentError,
} from "./extract/errors.ts";
export type { AttachmentErrorType, AttachmentErrorBody, ExtractionFailureReason, MissingDependency } from "./extract/errors.ts";
export { ExtractLimitsSchema, DEFAULT_EXTRACT_LIMITS, resolveExtractOptions, extractOptionsFromQuery, extractionVariant } from "./extract/options.ts";
export type { ExtractLimits, ExtractLimitsInput, ExtractOptions, ResolvedExtractOptions } from "./extract/options.ts";
export { bucketModelSource, bytesModelSource, DEFAULT_OCR_MAX_PIXELS } from "./extract/ocr.ts";
export type { OcrEngine, OcrImage, OcrModelSource, OcrOptions, ModelBucket } from "./extract/ocr.ts";
export { normalizeAttachment, attachmentDigest, decodeBase64 } from "./extract/input.ts";
export type { NormalizedAttachment } from "./extract/input.ts";
export { extractCached, extractionCacheKey, isCacheableFailure } from "./extract/cache.ts";
export type { CachedExtraction, ExtractionCache, Extractor, CachedExtractInput, CachedExtractOutput } from "./extract/cache.ts";
export { imageInfo } from "./extract/image.ts";
export type { ImageInfo } from "./extract/image.ts";
export { htmlToText } from "./extract/html.ts";
export type * from "./extract/types.ts";
