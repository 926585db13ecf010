/**
 * The usage route's shapes, in zod: a provider's usage object as a client of the compact route posts
 * it back, with the turn it belongs to, and the answer. The route validates with these and
 * /openapi.json is generated from them.
 */
import { z } from "zod";

const count = z.int().min(0).max(100_000_000);

/**
 * A provider usage object: Anthropic's (input, cache creation with its 5m/1h split, cache read,
 * output), OpenAI Chat's (prompt, cached, completion) or Responses' (input, cached, output). Other
 * fields the provider adds are kept as they are.
 */
export const ProviderUsageSchema = z
  .looseObject({
    input_tokens: count.optional(),
    output_tokens: count.optional(),
    cache_creation_input_tokens: count.nullable().optional(),
    cache_read_input_tokens: count.nullable().optional(),
    cache_creation: z
      .looseObject({
        ephemeral_5m_input_tokens: count.optional(),
        ephemeral_1h_input_tokens: count.optional(),
      })
      .nullable()
      .optional(),
    prompt_tokens: count.optional(),
    completion_tokens: count.optional(),
    total_tokens: count.optional(),
    prompt_tokens_details: z
      .looseObject({ cached_tokens: count.optional(), cache_write_tokens: count.optional() })
      .nullable()
      .optional(),
    input_tokens_details: z.looseObject({ cached_tokens: count.optional() }).nullable().optional(),
  })
  .describe("The provider's usage object, exactly as its answer carried it.");

export const ProviderUsageListSchema = z.array(ProviderUsageSchema).min(1).max(17);

export const UsageRequestSchema = z
  .strictObject({
    turn: z
      .int()
      .min(0)
      .optional()
      .describe("The `turn` of the compact call's x-offload-summary (its latest logged line)."),
    seq: z
      .int()
      .min(1)
      .nullable()
      .optional()
      .describe(
        "The `seq` of the compact call's x-offload-summary: that exact turn line. null (a steady turn's summary names none) is as absent: give `turn` then.",
      ),
    format: z
      .enum(["anthropic", "openai-chat", "openai-responses"])
      .default("anthropic")
      .describe("Which provider's usage shape `usage` is."),
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("The model that answered (default: the model the turn was priced as)."),
    usage: z
      .union([ProviderUsageSchema, ProviderUsageListSchema])
      .describe(
        "The answer's usage, or one per provider call the turn made (the client's first, then each recall hop).",
      ),
  })
  .refine((b) => (b.turn === undefined) !== (b.seq === undefined || b.seq === null), {
    message: "give exactly one of turn and seq",
    path: ["turn"],
  });

export const UsageResponseSchema = z.object({
  tenant: z.string(),
  session: z.string(),
  seq: z.int().describe("The turn line the usage is kept on."),
  status: z
    .enum(["recorded", "unchanged"])
    .describe("recorded: kept now; unchanged: the turn already had these numbers (idempotent)."),
  billed_usd: z
    .number()
    .nullable()
    .describe("The usage × the price table (null: the model is not in the table)."),
});
