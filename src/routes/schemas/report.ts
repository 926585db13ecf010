/**
 * The savings reports' shapes, in zod: a session's report and the tenant's. The routes validate
 * with these, the tests check responses against them, and /openapi.json is generated from them
 * (openapi.ts), so the three cannot disagree.
 */
import { z } from "zod";
import { Action, Tier } from "./session.ts";

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

const usd = (what: string) => z.number().describe(what);

export const TurnBilledSchema = z
  .object({
    usd: usd("Billed dollars for the turn: the provider's usage × the price table, every call."),
    hops_usd: usd("The recall hops' calls alone (a cost of offloading)."),
    calls: z.int().describe("Provider calls: the client's, then one per recall hop."),
    prompt_tokens: z.int(),
    cache_read_tokens: z.int(),
    cache_read_share: z
      .number()
      .nullable()
      .describe("Measured: cache-read tokens / prompt tokens."),
    counterfactual_usd: usd(
      "What the client's own request would have been billed: the client's call as billed, plus what the provider's cache rules say the client's own request would have cost beyond the one sent (its tokens taken out, measured where a result was once sent in full; its cache reads and writes as its own breakpoints, or the provider's automatic caching, would have made them).",
    ),
    saved_usd: usd(
      "counterfactual_usd − usd: net of the recall hops, the recall tool's tokens and cache rewrites (0 for a turn sent as the client sent it, and in shadow).",
    ),
    basis: z
      .enum(["untouched", "modelled", "estimated"])
      .describe(
        "untouched: sent as the client sent it, its own counterfactual; modelled: the provider's cache rules over the turn's sketch; estimated: a line logged before sketches (the tokens taken out at their position's rate).",
      ),
  })
  .nullable()
  .describe("What the provider billed, once its usage was measured (null before).");

const ErrorSharesSchema = z.object({
  turns: z.int().describe("Measured turns learned from."),
  error_raw: z
    .number()
    .nullable()
    .describe("Σ|estimate − measured| / Σ measured prompt tokens, before calibration."),
  error_calibrated: z.number().nullable().describe("The same with the calibrated estimates."),
  bias_raw: z.number().nullable().describe("Σ(estimate − measured) / Σ measured."),
  bias_calibrated: z.number().nullable(),
});

export const BilledTotalsSchema = z
  .object({
    turns_measured: z.int().describe("Turns with measured usage: the sums below are over them."),
    turns_unmeasured: z
      .int()
      .describe(
        "Live turns without usage (never posted, or a stream without it): the billed saving then counts their modelled saving and is incomplete.",
      ),
    complete: z.boolean().describe("Every live turn's usage was measured."),
    unmeasured_saved_usd: usd(
      "The unmeasured turns' modelled saving (from the estimates), included in saved_usd.",
    ),
    calls: z.int(),
    usd: usd("Billed dollars."),
    hops_usd: usd("The recall hops' own billed dollars."),
    prompt_tokens: z.int(),
    cache_read_tokens: z.int(),
    cache_write_tokens: z.int(),
    output_tokens: z.int(),
    cache_read_share: z.number().nullable(),
    estimated_prompt_tokens: z
      .int()
      .describe("The same turns' prompts as estimated (before calibration)."),
    counterfactual_usd: usd(
      "What the clients' own requests would have been billed (measured turns).",
    ),
    saved_usd: usd(
      "Billed saving: counterfactual_usd − usd, plus unmeasured_saved_usd when the session is incomplete.",
    ),
    removed: z
      .object({
        tokens: z.int().describe("Net of the stubs and the recall tool."),
        results: z.int().describe("The taken-out results' own tokens (before their stubs)."),
        measured: z
          .int()
          .describe(
            "Of those tokens, the ones measured (a result sent in full once: the growth of the measured prompt) rather than estimated.",
          ),
      })
      .optional()
      .describe("Tokens offloading took out of the measured turns' requests."),
    model_check: z
      .object({
        turns: z.int(),
        read_share_error: z.number().nullable(),
      })
      .optional()
      .describe(
        "The cache model against the provider on the measured turns sent as the client sent them: mean |modelled − measured| cache-read share of the prompt.",
      ),
    estimate_error: ErrorSharesSchema.optional().describe(
      "The session's estimates against its measured prompts (calibrated on its own turns).",
    ),
    estimate_basis: z
      .enum(["modelled", "tokens_removed", "mixed"])
      .optional()
      .describe(
        "What saved_usd beside billed is: modelled (the same cache rules over the estimates, grounded on the measured turns), or tokens_removed (no measured turn: the tokens taken out at their position's rate, not a saving on a bill); mixed on a tenant page whose sessions differ.",
      ),
  })
  .describe("Billed figures, beside the estimates above.");

export const CalibrationReportSchema = z
  .record(
    z.string(),
    ErrorSharesSchema.extend({
      ready: z.boolean().describe("Enough turns measured: the gate uses the ratios."),
      ratios: z
        .record(z.string(), z.number())
        .describe("Provider tokens per estimated token, per content kind and 'request'."),
    }),
  )
  .nullable()
  .describe("The tenant's calibration per model (null when it could not be read).");

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
  saved_usd: z
    .number()
    .describe(
      "Live turn: estimated dollars saved (0 for a shadow turn). With a measured turn in the session (totals.billed.estimate_basis \"modelled\"): the provider's cache rules over the client's request and the one sent, from the estimates, net of the recall hops' billed calls. Without one (\"tokens_removed\"): the tokens taken out at the rate their position is billed at, less the recall tool's tokens: a value of tokens removed, not a saving on a bill.",
    ),
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
  billed: TurnBilledSchema,
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
  billed: BilledTotalsSchema,
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
  reason: z
    .string()
    .describe('Why, naming the tool rule that applied ("kept: tool rule `web_*` says never").'),
  gate: GateBreakdownSchema.nullable(),
  rule: z
    .string()
    .nullable()
    .describe(
      "The `tool` of the tool rule this result's tool follows (tool_result_tool_rules), or null.",
    ),
});

export const SessionReportSchema = z.object({
  tenant: z.string(),
  session: z.string(),
  created_at: z.iso.datetime(),
  last_active: z.iso.datetime(),
  mode: ModeSchema,
  note: z
    .string()
    .nullable()
    .describe(
      "Shadow mode: what the session would have saved so far and the one line to go live; else null.",
    ),
  last_turn_at: z.iso.datetime().nullable().describe("When the latest logged turn was committed."),
  totals: ReportTotalsSchema,
  turns: z.array(ReportTurnSchema).describe("The last 1,000 turns, oldest first."),
  calibration: CalibrationReportSchema,
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
    .extend({
      sessions: z.int(),
      calls: z.int(),
      billed: BilledTotalsSchema.extend({
        dearer: z
          .object({
            sessions: z
              .int()
              .describe(
                "Sessions of this page whose billed saving is below 0: offloading cost them money.",
              ),
            of: z.int().describe("Sessions of this page with measured usage."),
            worst_share: z
              .number()
              .nullable()
              .describe(
                "The largest of those losses as a share of that session's counterfactual (0.031: its bill 3.1% over what its own requests would have cost); null when none.",
              ),
          })
          .describe(
            "The sessions offloading made dearer, counted rather than netted into the page's saving.",
          ),
      }),
    })
    .describe("Sums over this page's sessions (follow the cursor for the rest)."),
  missing: z
    .int()
    .describe(
      "Sessions the index listed that have no state (deleted or purged since; the index lags).",
    ),
  calibration: CalibrationReportSchema,
  cursor: z.string().nullable().describe("Pass as ?cursor= for the next page."),
  consistency: z
    .literal("eventual")
    .describe("Sessions are listed from KV: one created in the last minute may be missing."),
});
