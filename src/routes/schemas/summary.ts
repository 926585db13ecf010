/**
 * The `x-offload-summary` header of a compact or proxied call, in zod. The routes validate with
 * these, the tests check responses against them, and /openapi.json is generated from them
 * (openapi.ts), so the three cannot disagree.
 */
import { z } from "zod";
import { ExtractionProblemSchema, ProblemSchema } from "./errors.ts";

export const SummarySchema = z.object({
  enabled: z.boolean(),
  offload: z.boolean(),
  changed: z.boolean().describe("The returned request differs from the one sent."),
  format: z.string(),
  model: z.string().nullable(),
  priced_as: z.string().nullable(),
  turn: z.int(),
  seq: z
    .int()
    .nullable()
    .describe(
      "Compact route: the turn line this call logged (POST …/usage names it); null elsewhere or when none was.",
    ),
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
      "Estimated dollars this request saves against sending every result full (0 in shadow mode): tokens taken out at the rate their position is billed at, less the recall tool's tokens and, on a buffered proxied answer, the recall hops' billed calls. The billed saving is in the reports.",
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
  anthropic_beta: z
    .array(z.string())
    .optional()
    .describe(
      'The anthropic-beta values the compacted request needs: "inline-tools-2026-09-15" where the recall tool is declared in a system message (tool_result_recall_tool_inline). The proxy adds them; a caller of compact sends them.',
    ),
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
      failures: z
        .array(ExtractionProblemSchema)
        .describe("Why blocks stayed native (at most 8), each with the block's path."),
      ocr: z
        .object({
          read: z.int().describe("Images whose OCR text is in their placeholder this turn."),
          not_read: z.int().describe("Images decided this turn without OCR text."),
          notes: z
            .array(
              z.object({
                path: z.string(),
                outcome: z
                  .enum(["hot", "skipped", "dropped", "failed", "unavailable"])
                  .describe(
                    "hot: read when it leaves its hot turns; skipped: not worth reading (or no bytes); dropped: read, but its text costs more than it saves; failed: could not be read, for good; unavailable: no OCR here (off, no engine or model), tried again next turn.",
                  ),
                cached: z
                  .boolean()
                  .optional()
                  .describe("The outcome came from the tenant's extraction cache."),
                reason: z.string(),
              }),
            )
            .describe("Why each image not read was not (at most 8)."),
        })
        .nullable()
        .describe(
          "With attachment_ocr on: what OCR did for the images decided this turn; else null.",
        ),
    })
    .nullable()
    .describe(
      "The attachment policy's effect on this request (null when attachment_policy is native).",
    ),
  tool_rules: z
    .array(
      z.object({
        tool: z.string().describe("The rule's `tool` (cut to 64 characters)."),
        says: z.string().describe("What the rule sets, as decisions' reasons name it."),
        results: z.int(),
        kept: z.int(),
        compacted: z.int(),
        offloaded: z.int(),
      }),
    )
    .describe(
      "What each tool rule (tool_result_tool_rules) matched this turn, by action (at most 8, in the rules' order).",
    ),
  note: z
    .string()
    .nullable()
    .describe(
      "For a person: in shadow mode, what the call would save and the one line to go live; with compaction off, that it is off. Null otherwise.",
    ),
  errors: z
    .array(ProblemSchema)
    .describe(
      "What went wrong without failing the call (at most 8; errors_total counts them all).",
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
      hops: z
        .int()
        .nullable()
        .describe("Extra provider calls made to answer recall_tool_result (null: not known yet)."),
      recalls: z.int().nullable().describe("recall_tool_result calls the proxy executed."),
      ending: z
        .enum(["done", "mixed", "exhausted", "failed"])
        .nullable()
        .describe("failed: a recall hop failed or was refused, or the stream was cut."),
      memos: z
        .int()
        .nullable()
        .describe(
          "Records kept for later requests of the session (mixed turns, response aliases).",
        ),
      usd: z
        .number()
        .nullable()
        .describe(
          "Billed dollars for the call, every hop (the provider's usage × the price table); buffered answers only (streams: the closing comment).",
        ),
      hop_usd: z
        .number()
        .nullable()
        .describe("The recall hops' calls alone; saved_usd is net of it."),
    })
    .nullable()
    .describe(
      "Proxy routes (and the in-process integrations' reports); null on the compact route.",
    ),
});
