/**
 * `edge-offload/toolkit`: tools that bound their own output on first delivery (what offload cannot
 * do: the model reads a result once in full). `definePagedTool` returns a page, the total and a
 * `next_offset`; `defineTool` checks the model's input and answers a mistake as an `is_error`;
 * `previewOf` shows the structure and head a stub would. `edge-offload/hono` serves them from a
 * Worker.
 *
 * @example
 * import { definePagedTool } from "edge-offload/toolkit";
 * const search = definePagedTool({ name: "search", description: "…", input, rows: (q) => find(q) });
 */
export { OffloadError } from "../errors.ts";
export type {
  PagedInput,
  PagedToolSpec,
  PageShape,
  PageShapeOptions,
  RowsResult,
} from "./paged.ts";
export { definePagedTool, pageShape } from "./paged.ts";
export type { Page, PaginateOptions } from "./paginate.ts";
export { PAGE_DEFAULTS, paginate } from "./paginate.ts";
export type { PreviewOptions } from "./preview.ts";
export { previewOf, serializeValue } from "./preview.ts";
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
} from "./tool.ts";
export { defineTool, toolResult } from "./tool.ts";
