/**
 * What goes wrong, in zod: the one error body, and the non-fatal problems a call reports. The
 * routes validate with these, the tests check responses against them, and /openapi.json is
 * generated from them (openapi.ts), so the three cannot disagree.
 */
import { z } from "zod";
import type { Problem } from "../../core/problems.ts";

const IssueSchema = z.object({
  code: z.string().describe("zod's issue code: invalid_type, too_small, unrecognized_keys…"),
  path: z.string(),
  message: z.string(),
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
      "conflict",
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
      .describe(
        "Where in the input the (first) problem is, e.g. messages[3].content[0].tool_use_id.",
      ),
    issues: z
      .array(IssueSchema)
      .optional()
      .describe("Every problem found, when there are several (the message names them too)."),
  }),
});

export const ExtractionProblemSchema = z.object({
  code: z.enum(["unsupported_attachment", "extraction_dependency_missing", "extraction_failed"]),
  message: z.string(),
  reason: z
    .enum(["corrupt", "encrypted", "empty", "too_large", "low_confidence"])
    .optional()
    .describe("extraction_failed only."),
  path: z.string().optional().describe("Where the attachment is in the request."),
});

/** A non-fatal problem: the call succeeded, and this says what it could not do. */
export const ProblemSchema = z
  .discriminatedUnion("code", [
    z.object({
      code: z.literal("storage_error"),
      message: z.string(),
      tool_use_id: z.string().optional().describe("The result or attachment left as sent."),
    }),
    z.object({
      code: z.literal("conflict"),
      message: z.string(),
      tool_use_id: z.string().describe("A decided id sent again with a different body."),
    }),
    z.object({
      code: z.literal("index_error"),
      message: z.string(),
      mem_id: z.string().optional(),
    }),
    z.object({ code: z.literal("stats_error"), message: z.string() }),
    z.object({
      code: z.literal("unpriced_model"),
      message: z
        .string()
        .describe("Names the model and tool_result_pricing_model, which prices it."),
    }),
    z.object({
      code: z.enum(["invalid_request", "unplaced"]),
      message: z.string(),
      path: z
        .string()
        .optional()
        .describe("Where in the request (a shape passed through as it is, not compacted)."),
    }),
    ExtractionProblemSchema,
  ])
  .describe("A non-fatal problem, told apart by `code`.") satisfies z.ZodType<Problem>;
