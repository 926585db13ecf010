/**
 * The session routes' shapes, in zod: recall, the session view and its config, memories, health.
 * The routes validate with these, the tests check responses against them, and /openapi.json is
 * generated from them (openapi.ts), so the three cannot disagree.
 */
import { z } from "zod";
import {
  OffloadConfigPatchSchema,
  OffloadConfigSchema,
  RECALL_HARD_CAP_CHARS,
} from "../../config.ts";
import { MAX_QUESTIONS } from "../../core/recall-many.ts";

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

export const Tier = z.enum(["hot", "small", "medium", "large", "attachment"]);
export const Action = z.enum(["kept", "compacted", "offloaded"]);

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

export const HealthSchema = z.object({ ok: z.literal(true) });
