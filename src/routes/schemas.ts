/**
 * The HTTP API's shapes, in zod: the routes validate requests with them, the tests check responses against
 * them, and /openapi.json is generated from them, so the three cannot disagree.
 */

import { z } from "zod";
import { OffloadConfigPatchSchema, OffloadConfigSchema, RECALL_HARD_CAP_CHARS } from "../config.ts";
import { MAX_QUESTIONS } from "../core/recall-many.ts";

export const RecallRequestSchema = z
  .strictObject({
    mem_id: z.string().min(1).describe("The mem_id shown in the stub (trm_…)."),
    query: z
      .string()
      .min(1)
      .optional()
      .describe("Exact, case-sensitive substring; every match comes back with ±window chars."),
    window: z
      .int()
      .min(0)
      .max(5000)
      .optional()
      .describe(
        "Chars of context on each side of a query match (default: tool_result_recall_window_chars).",
      ),
    offset: z.int().min(0).optional().describe("Start of a slice, in JavaScript string units."),
    max_chars: z
      .int()
      .min(1)
      .max(RECALL_HARD_CAP_CHARS)
      .optional()
      .describe("Length of the slice starting at offset."),
    json_path: z
      .string()
      .min(1)
      .optional()
      .describe('JSONPath into a JSON body, e.g. "$.items[3].price" ("$." may be left out).'),
    queries: z
      .array(z.string().min(1))
      .min(1)
      .max(MAX_QUESTIONS)
      .optional()
      .describe("Several exact substrings in one call, each answered like query."),
    json_paths: z
      .array(z.string().min(1))
      .min(1)
      .max(MAX_QUESTIONS)
      .optional()
      .describe("Several JSONPaths in one call, each answered like json_path."),
  })
  .describe("The model's recall_tool_result arguments, as the client received them.");

export const RecallResponseSchema = z
  .object({
    content: z.string().describe("What the client puts in the tool result."),
    is_error: z
      .boolean()
      .describe("A model mistake (unknown mem_id, bad path…): send content with is_error true."),
    mode: z.enum(["query", "slice", "json_path", "head", "error"]),
    total_chars: z.int().min(0).describe("Length of the whole body (0 when it was not found)."),
    truncated: z.boolean(),
    next_offset: z.int().min(0).optional().describe("Where to continue reading."),
    matches: z.int().min(0).optional(),
  })
  .describe("A recall answer.");

const Tier = z.enum(["hot", "small", "medium", "large", "attachment"]);
const Action = z.enum(["kept", "compacted", "offloaded"]);

export const TurnLogSchema = z.object({
  turn: z.int().describe("Assistant turns in the request."),
  results: z.int(),
  kept: z.int(),
  compacted: z.int(),
  offloaded: z.int(),
  new_decisions: z.int(),
  tokens_before: z.int().describe("Estimated prompt tokens with every result full."),
  tokens_after: z.int().describe("Estimated prompt tokens as returned."),
  saved_usd: z
    .number()
    .describe("Estimated dollars saved; in a shadow turn, what offload would have saved."),
  errors: z.int(),
  shadow: z
    .boolean()
    .describe(
      "Shadow mode: decided and recorded, the request returned unchanged; tokens_after and saved_usd are what offload would have done.",
    ),
  gate_fired: z.int().describe("Decisions taken this turn for which the net-saving gate fired."),
  gate_declined: z.int().describe("Decisions taken this turn for which the gate declined."),
  at: z.number().describe("Commit time, epoch milliseconds."),
  recalls: z
    .int()
    .describe(
      "Successful recalls after this turn (the model answering this prompt read them back).",
    ),
  proxy: z
    .object({ hops: z.int(), recalls: z.int(), exhausted: z.boolean() })
    .optional()
    .describe(
      "Proxied calls with recalls: the extra provider calls (hops) and the recalls the proxy ran.",
    ),
});

export const ToolResultSchema = z.object({
  tool_use_id: z.string(),
  tool_name: z.string(),
  tier: Tier,
  action: Action,
  mem_id: z.string().nullable(),
  chars: z.int().describe("Size of the result's text."),
  tokens: z.int().describe("Estimated tokens of the full text."),
  sent_tokens: z.int().describe("Estimated tokens the result costs as rendered."),
  kind: z.string(),
  turn: z.int().describe("Turn on which the decision was taken (sticky from then on)."),
  reason: z.string(),
  recalls: z.int().describe("Successful recalls of this mem_id."),
  gate: z
    .looseObject({ fire: z.boolean(), net_usd: z.number() })
    .nullable()
    .describe("The net-saving gate's breakdown, in dollars, when it was consulted."),
});

export const SessionTotalsSchema = z.object({
  calls: z.int().describe("Compact calls that saved a turn."),
  turns_logged: z.int(),
  tool_results: z.int(),
  kept: z.int(),
  compacted: z.int(),
  offloaded: z.int(),
  recalls: z.int(),
  offloaded_chars: z
    .int()
    .describe("Chars of the bodies that the ledger holds instead of the prompt."),
  tokens_before: z.int().describe("Sum over logged turns."),
  tokens_after: z.int().describe("Sum over logged turns."),
  saved_tokens: z.int(),
  saved_usd: z.number(),
  proxy_hops: z
    .int()
    .describe("Extra provider calls the proxy made to answer recalls, over logged turns."),
});

export const SessionResponseSchema = z.object({
  tenant: z.string(),
  session: z.string(),
  created_at: z.iso.datetime(),
  last_active: z.iso.datetime(),
  expires_at: z.iso
    .datetime()
    .nullable()
    .describe("When the idle session will be purged (null: kept until deleted)."),
  recall_declared: z.boolean(),
  config: OffloadConfigPatchSchema.describe("The session's own config layer (PUT …/config)."),
  effective_config: OffloadConfigSchema.describe("Defaults ← deployment ← session."),
  totals: SessionTotalsSchema,
  tool_results: z.array(ToolResultSchema),
  attachments: z
    .array(
      z.object({
        id: z.string().describe("att_…: the block's id (its place and its bytes)."),
        kind: z.enum(["document", "image"]),
        action: z.enum(["replaced", "native"]),
        format: z.string(),
        bytes: z.int(),
        arrived: z.int().describe("The turn the block arrived on."),
        native_tokens: z.int().nullable(),
        sent_tokens: z.int(),
        turn: z.int().describe("Turn on which the decision was taken (sticky from then on)."),
        reason: z.string(),
        error: z
          .object({ type: z.string(), reason: z.string().optional(), message: z.string() })
          .optional(),
      }),
    )
    .describe("Sticky attachment decisions (attachment_policy)."),
  turns: z.array(TurnLogSchema).describe("The last 1,000 turns, oldest first."),
});

export const ConfigResponseSchema = z.object({
  tenant: z.string(),
  session: z.string(),
  config: OffloadConfigPatchSchema,
  effective_config: OffloadConfigSchema,
});

export const SessionListSchema = z.object({
  sessions: z.array(z.object({ session: z.string(), created_at: z.iso.datetime() })),
  cursor: z.string().nullable().describe("Pass as ?cursor= for the next page."),
  consistency: z
    .literal("eventual")
    .describe("Read from KV: a session created in the last minute may be missing."),
});

export const MemorySchema = z.object({
  mem_id: z.string(),
  tool_use_id: z.string(),
  tool_name: z.string(),
  chars: z.int(),
  tokens: z.int(),
  kind: z.string(),
  outline: z.string().describe("The structural index shown in the stub."),
  turn: z.int(),
  source: z.enum(["index", "ledger"]).describe("KV answered, or R2 after a KV miss."),
});

export const ErrorSchema = z.object({
  error: z.object({
    type: z.enum([
      "invalid_json",
      "invalid_request",
      "invalid_config",
      "invalid_argument",
      "unauthorized",
      "not_found",
      "payload_too_large",
      "unprocessable",
      "storage_error",
      "upstream_error",
      "internal",
    ]),
    message: z.string(),
    path: z
      .string()
      .optional()
      .describe("Where in the input the problem is, e.g. messages[3].content[0].tool_use_id."),
  }),
});

export const SummarySchema = z.object({
  enabled: z.boolean(),
  offload: z.boolean(),
  changed: z.boolean().describe("The returned request differs from the one sent."),
  format: z.string(),
  model: z.string().nullable(),
  priced_as: z.string().nullable(),
  turn: z.int(),
  results: z.int(),
  kept: z.int(),
  compacted: z.int(),
  offloaded: z.int(),
  new_decisions: z.int(),
  tokens_before: z.int(),
  tokens_after: z.int(),
  saved_tokens: z.int(),
  saved_usd: z
    .number()
    .describe(
      "Estimated dollars this request saves against sending every result full (0 in shadow mode).",
    ),
  shadow: z
    .boolean()
    .describe(
      "Shadow mode: decided and recorded, but the request was returned unchanged; the counts are the decisions taken.",
    ),
  would_save_tokens: z
    .int()
    .describe("Shadow mode: the tokens offload would have saved (0 otherwise)."),
  would_save_usd: z
    .number()
    .describe("Shadow mode: the dollars offload would have saved (0 otherwise)."),
  recall_tool: z.enum(["added", "present", "none"]),
  attachments: z
    .object({
      policy: z.enum(["extract", "extract_after_first"]),
      blocks: z.int(),
      replaced: z.int(),
      native: z.int(),
      failed: z
        .int()
        .describe("Blocks left native because their extraction failed (why: failures)."),
      extracted: z.int().describe("Files parsed this turn (not read from the extraction cache)."),
      native_tokens: z
        .int()
        .describe(
          "Estimated tokens of the counted blocks sent natively (images ≈ w×h/750, PDFs ≈ 1,600 per page + text).",
        ),
      sent_tokens: z.int(),
      saved_tokens: z.int(),
      saved_usd: z.number(),
      failures: z.array(
        z.object({
          path: z.string(),
          type: z.string(),
          reason: z.string().optional(),
          message: z.string(),
        }),
      ),
    })
    .nullable()
    .describe(
      "The attachment policy's effect on this request (null when attachment_policy is native).",
    ),
  errors: z.array(
    z.object({
      type: z.string(),
      message: z.string(),
      tool_use_id: z.string().optional(),
      mem_id: z.string().optional(),
    }),
  ),
  errors_total: z.int(),
  proxy: z
    .object({
      stream: z
        .boolean()
        .describe(
          "The answer is an event stream: hops are reported in its last comment line and the turn log.",
        ),
      spliced: z
        .int()
        .describe("Remembered recall calls (of mixed turns) spliced back into this request."),
      hops: z.int().optional().describe("Extra provider calls made to answer recall_tool_result."),
      recalls: z.int().optional().describe("recall_tool_result calls the proxy executed."),
      ending: z.enum(["done", "mixed", "exhausted"]).optional(),
      memos: z
        .int()
        .optional()
        .describe(
          "Records kept for later requests of the session (mixed turns, response aliases).",
        ),
    })
    .optional()
    .describe("Proxy routes only."),
});

export const HealthSchema = z.object({ ok: z.literal(true) });

const GateBreakdownSchema = z
  .looseObject({
    fire: z.boolean(),
    net_usd: z.number(),
    reprefill_saving_usd: z.number(),
    stub_carry_cost_usd: z.number(),
    invalidation_cost_usd: z.number(),
    expected_recall_hop_cost_usd: z.number(),
    tool_declaration_cost_usd: z.number(),
    reason: z.string(),
    model: z.string().nullable(),
  })
  .describe("The net-saving gate's breakdown in dollars (and, in `inputs`, what it priced).");

export const ReportTurnSchema = z.object({
  turn: z.int().describe("Assistant turns in the request."),
  at: z.iso.datetime().describe("When the turn was committed."),
  shadow: z
    .boolean()
    .describe("Shadow turn: decided and recorded, the request returned unchanged."),
  results: z.int(),
  kept: z.int(),
  compacted: z.int(),
  offloaded: z.int(),
  new_decisions: z.int(),
  tokens_before: z.int().describe("Estimated prompt tokens without offload (every result full)."),
  tokens_after: z
    .int()
    .describe(
      "Estimated prompt tokens with offload: as sent, or for a shadow turn as it would have been sent.",
    ),
  saved_tokens: z.int().describe("Live turn: tokens saved (0 for a shadow turn)."),
  saved_usd: z.number().describe("Live turn: estimated dollars saved (0 for a shadow turn)."),
  would_save_tokens: z
    .int()
    .describe("Shadow turn: tokens offload would have saved (0 for a live turn)."),
  would_save_usd: z
    .number()
    .describe("Shadow turn: dollars offload would have saved (0 for a live turn)."),
  recalls: z.int().describe("Successful recalls after this turn, before the next."),
  gate_fired: z.int(),
  gate_declined: z.int(),
  errors: z.int(),
});

export const ReportTotalsSchema = z.object({
  calls: z.int().describe("Compact calls that saved a turn."),
  turns_logged: z
    .int()
    .describe("Turns in the log (the last 1,000): the sums below are over them."),
  shadow_turns: z.int(),
  tokens_before: z.int(),
  tokens_after: z.int(),
  saved_tokens: z.int(),
  saved_usd: z.number(),
  would_save_tokens: z.int(),
  would_save_usd: z.number(),
  kept: z.int().describe("Sticky decisions by action (every decided result of the session)."),
  compacted: z.int(),
  offloaded: z.int(),
  offloaded_recalled: z.int().describe("Offloaded results read back at least once."),
  recalls: z.int().describe("Successful recalls in the session."),
  recall_rate: z
    .number()
    .nullable()
    .describe("offloaded_recalled / offloaded; null before the first offload."),
  gate_fired: z.int(),
  gate_declined: z.int(),
});

const ModeSchema = z
  .enum(["live", "shadow"])
  .nullable()
  .describe(
    "How the latest logged turn ran: live, or shadow (decided and recorded, request unchanged); null before the first.",
  );

export const DecisionReportSchema = z.object({
  tool_use_id: z.string(),
  tool_name: z.string(),
  path: z.string().describe("Where the result sits in the request."),
  tier: Tier,
  action: Action,
  mem_id: z.string().nullable(),
  chars: z.int(),
  tokens: z.int(),
  sent_tokens: z
    .int()
    .describe("Tokens as rendered (in a shadow turn: as it would have been rendered)."),
  sticky: z.boolean().describe("Taken on an earlier turn and replayed."),
  reason: z.string(),
  gate: GateBreakdownSchema.nullable(),
});

export const SessionReportSchema = z.object({
  tenant: z.string(),
  session: z.string(),
  created_at: z.iso.datetime(),
  last_active: z.iso.datetime(),
  mode: ModeSchema,
  last_turn_at: z.iso.datetime().nullable().describe("When the latest logged turn was committed."),
  totals: ReportTotalsSchema,
  turns: z.array(ReportTurnSchema).describe("The last 1,000 turns, oldest first."),
  last_turn: z
    .object({
      turn: z.int(),
      at: z.iso.datetime(),
      shadow: z.boolean(),
      decisions: z
        .array(DecisionReportSchema)
        .describe("At most 200: the last ones in request order."),
      decisions_total: z.int(),
    })
    .nullable()
    .describe("The decisions of the latest turn, with their gate breakdown."),
});

export const TenantReportSessionSchema = ReportTotalsSchema.extend({
  session: z.string(),
  created_at: z.iso.datetime(),
  last_active: z.iso.datetime(),
  mode: ModeSchema,
});

export const TenantReportSchema = z.object({
  tenant: z.string(),
  sessions: z
    .array(TenantReportSessionSchema)
    .describe("This page's sessions, in the index's order."),
  totals: ReportTotalsSchema.omit({ calls: true })
    .extend({ sessions: z.int(), calls: z.int() })
    .describe("Sums over this page's sessions (follow the cursor for the rest)."),
  missing: z
    .int()
    .describe(
      "Sessions the index listed that have no state (deleted or purged since; the index lags).",
    ),
  cursor: z.string().nullable().describe("Pass as ?cursor= for the next page."),
  consistency: z
    .literal("eventual")
    .describe("Sessions are listed from KV: one created in the last minute may be missing."),
});

const ExtractedFormat = z.enum([
  "pdf",
  "docx",
  "xlsx",
  "text",
  "csv",
  "tsv",
  "json",
  "html",
  "markdown",
  "xml",
  "png",
  "jpeg",
  "gif",
  "webp",
  "bmp",
  "tiff",
  "heic",
  "avif",
]);

const ExtractCacheFields = {
  cached: z
    .boolean()
    .describe(
      "The outcome came from the tenant's extraction cache (keyed by the file's SHA-256): nothing was parsed.",
    ),
  cache_error: z
    .enum(["read", "write"])
    .optional()
    .describe(
      "The cache could not be read or written; the outcome is still right (the file was extracted).",
    ),
};

export const ExtractSuccessSchema = z
  .object({
    ok: z.literal(true),
    format: ExtractedFormat,
    text: z.string(),
    pages: z.int().optional().describe("PDF: pages in the document."),
    pages_extracted: z.int().optional().describe("PDF: pages read (at most max_pages)."),
    sheets: z.int().optional().describe("XLSX: worksheets in the workbook."),
    width: z.int().optional(),
    height: z.int().optional(),
    truncated: z
      .boolean()
      .describe(
        "A cap (max_pages, max_chars, max_rows, max_cells, max_sheets) cut the text short.",
      ),
    truncated_by: z
      .enum(["max_pages", "max_chars", "max_rows", "max_cells", "max_sheets"])
      .optional(),
    digest: z.string().describe("SHA-256 of the file's bytes (hex)."),
    ...ExtractCacheFields,
  })
  .describe("The extracted text.");

export const AttachmentErrorBodySchema = z.object({
  type: z.enum([
    "unsupported_attachment",
    "extraction_dependency_missing",
    "extraction_failed",
    "internal",
  ]),
  message: z.string(),
  format: z
    .string()
    .optional()
    .describe("What the bytes were detected as (pdf, doc, webp, unknown…)."),
  reason: z
    .enum(["corrupt", "encrypted", "empty", "too_large"])
    .optional()
    .describe("extraction_failed only."),
  dependency: z
    .enum(["ocr_engine", "ocr_model", "pdf_engine"])
    .optional()
    .describe("extraction_dependency_missing only."),
  index: z
    .int()
    .optional()
    .describe("Position of the file in a multipart request (on_error=raise)."),
});

export const ExtractFailureSchema = z
  .object({
    ok: z.literal(false),
    error: AttachmentErrorBodySchema,
    fallback: z.literal("native").describe("Send the file natively instead."),
    digest: z.string().nullable().optional(),
    ...ExtractCacheFields,
  })
  .describe("The file could not be extracted: send it natively.");

const BatchItemFields = {
  index: z.int().describe("Position among the request's files."),
  field: z.string().describe("The multipart field name."),
  filename: z.string().optional(),
};

export const ExtractBatchSchema = z
  .object({
    results: z.array(
      z.union([
        ExtractSuccessSchema.extend(BatchItemFields),
        ExtractFailureSchema.extend(BatchItemFields),
      ]),
    ),
  })
  .describe("One result per file, in order (on_error=warn).");
