/**
 * The one config schema, with every default. Field names are snake_case `tool_result_*` settings,
 * the same in a deployment's vars, a session's stored config and a per-request `x-offload-config`
 * header. Unknown fields are rejected: a misspelt switch must not silently leave a feature off.
 */
import { z } from "zod";
import { FIELD_LIMITS } from "./core/formats/shape.ts";
import { formatPath, OffloadError, zodError } from "./errors.ts";

export const RECALL_HARD_CAP_CHARS = 50_000;

export const RecallModeSchema = z.enum(["window", "structural", "both"]);
export type RecallMode = z.infer<typeof RecallModeSchema>;

/** Rules a config may hold: each is matched against every tool result's tool name, first match wins. */
export const TOOL_RULES_MAX = 32;
/** The longest `tool` of a rule (a tool name is read up to 256 characters). */
export const TOOL_RULE_PATTERN_MAX = FIELD_LIMITS.tool_name;

/**
 * One per-tool rule: `tool` names the tool exactly, or as a glob where `*` matches any run of
 * characters (nothing else is special); every other field overrides the config for that tool's
 * results. A rule with only `tool` keeps the defaults for that tool (a later glob then skips it).
 */
export const ToolRuleSchema = z.strictObject({
  tool: z
    .string()
    .min(1)
    .max(TOOL_RULE_PATTERN_MAX)
    .describe(
      'A tool name, or a glob where `*` matches any run of characters ("web_*", "mcp__*").',
    ),
  offload: z
    .enum(["never", "gated"])
    .optional()
    .describe(
      '"never": the tool\'s results are always kept full (never stubbed, shortened, nor taken by a context-pressure batch); "gated": as the config says.',
    ),
  compaction_size_chars: z
    .int()
    .min(0)
    .optional()
    .describe("This tool's size floor (tool_result_compaction_size_chars)."),
  large_offload_threshold_chars: z
    .int()
    .min(1)
    .optional()
    .describe("This tool's large threshold (tool_result_large_offload_threshold_chars)."),
  keep_last_n: z
    .int()
    .min(0)
    .max(1000)
    .optional()
    .describe("This tool's most recent results kept full, counted among its own results."),
  offload_recall_probability: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe("This tool's prior recall probability (tool_result_offload_recall_probability)."),
  first_delivery: z
    .enum(["full", "gated"])
    .optional()
    .describe("This tool's first delivery (tool_result_first_delivery)."),
});
export type ToolRule = z.infer<typeof ToolRuleSchema>;

const fields = {
  tool_result_compaction_enabled: z
    .boolean()
    .default(false)
    .describe("Umbrella switch: off means every request passes through byte for byte."),
  tool_result_offload_enabled: z
    .boolean()
    .default(false)
    .describe("Large-tier offload behind the net-saving gate (needs the umbrella switch)."),
  tool_result_compaction_size_chars: z
    .int()
    .min(0)
    .default(8000)
    .describe("Small ↔ larger floor: results of at most this many chars are always kept."),
  tool_result_large_offload_threshold_chars: z
    .int()
    .min(1)
    .default(60_000)
    .describe("Pre-filter: only results of at least this many chars are considered for offload."),
  tool_result_compaction_keep_last_n: z
    .int()
    .min(0)
    .max(1000)
    .default(1)
    .describe("The most recent tool results kept full (the hot window)."),
  tool_result_offload_horizon_default: z
    .number()
    .positive()
    .max(10_000)
    .default(5)
    .describe(
      "Expected remaining turns over which a saving accrues: the prior, where the store supplies no observed session lengths (or too few).",
    ),
  tool_result_offload_horizon_learned: z
    .boolean()
    .default(true)
    .describe(
      "Learn the horizon from the tenant's observed session lengths when the store supplies them: the expected number of calls a session that has run this long still makes. false: always the configured horizon.",
    ),
  tool_result_offload_recall_probability: z
    .number()
    .min(0)
    .max(1)
    .default(0.5)
    .describe("Prior probability that the model re-reads an offloaded result."),
  tool_result_offload_min_net_share: z
    .number()
    .min(0)
    .max(1)
    .default(0)
    .describe(
      "A robustness margin for the gate and the breakpoint move: offload only where the expected net saving is more than this share of the gross saving. A thin net pays only if the recall prior and the horizon hold; a session that ends a few calls after such a stub (or recalls it at once) is made dearer. At 0.2 the SWE sessions made dearer with realistic endings go from 2-3% to under 1%, for about a point of saving (docs/measure.md, 'Realistic endings over many draws'). 0: any positive net.",
    ),
  tool_result_recall_mode: RecallModeSchema.default("both").describe(
    'Which arguments recall_tool_result offers: "window" (query/slice), "structural" (json_path/slice) or "both".',
  ),
  tool_result_compaction_preview_chars: z
    .int()
    .min(0)
    .max(20_000)
    .default(2000)
    .describe("Head kept by the size-only path when it shortens a result."),
  tool_result_stub_preview_chars: z
    .int()
    .min(0)
    .max(2000)
    .default(400)
    .describe("Head preview shown in an offload stub."),
  tool_result_recall_max_chars: z
    .int()
    .min(500)
    .max(RECALL_HARD_CAP_CHARS)
    .default(RECALL_HARD_CAP_CHARS)
    .describe("Cap on one recall answer (at most 50,000 chars)."),
  tool_result_recall_window_chars: z
    .int()
    .min(0)
    .max(5000)
    .default(300)
    .describe("Default ±context around each query match."),
  tool_result_recall_tool_declaration: z
    .enum(["lazy", "eager", "free"])
    .default("lazy")
    .describe(
      'When the recall tool is added to `tools`: "lazy" on the first offload (the gate prices rewriting the prompt head), "eager" from the first enabled turn, "free" on the first turn of a session or a turn whose cache has lapsed (where it rewrites nothing cached), else lazily.',
    ),
  tool_result_recall_tool_inline: z
    .boolean()
    .default(true)
    .describe(
      'Where the model takes tools defined mid-conversation (Anthropic, beta "inline-tools-2026-09-15": Opus 4.8 and later, the 5.5 models, Fable and Mythos), declare the recall tool in a system message right after the first stub instead of in `tools`: nothing cached before it is rewritten, and a model with preserved thinking keeps its history. The request then needs that beta: the proxy and the fetch wrapper add the header; a compact() caller opts in with sendsBetas (a caller of the compact route with x-offload-sends-betas: true) and sends the anthropic_beta it is given. false: always in `tools`.',
    ),
  tool_result_medium_tier: z
    .enum(["off", "cache_anchor"])
    .default("cache_anchor")
    .describe(
      '"cache_anchor" (the default): for a client that advances no cache breakpoint of its own, add one (Anthropic) so what the model has read, medium results included, is billed at cache-read price, within tool_result_anchor_risk_share. "off": never add one.',
    ),
  tool_result_anchor_risk_share: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .default(0.02)
    .describe(
      "The anchor's risk bound: its cache write's premium over input (lost if the session ends or pauses past the TTL before the next call) may be at most this share of what the session has spent so far plus what the call's stubs save on it, so the anchor makes no session dearer by more than it. null: no bound (the anchor from the first call where it pays at the observed gap).",
    ),
  tool_result_breakpoint_move: z
    .boolean()
    .default(true)
    .describe(
      "Never cache what is about to be stubbed: on the turn a result arrives that the gate prices to offload once settled, move the client's cache breakpoint (Anthropic) from after it to just before it, so the call writes only what the next call reads, and offload the result once settled. Priced: only where the move pays.",
    ),
  tool_result_offload_adaptive: z
    .boolean()
    .default(false)
    .describe(
      "Learn the recall probability per tool (tenant-wide and per session) and the horizon from the session's length.",
    ),
  tool_result_calibration_enabled: z
    .boolean()
    .default(true)
    .describe(
      "Scale the gate's token estimates by the ratio of provider-counted to estimated tokens learned per tenant and model from measured usage (after 5 measured turns).",
    ),
  tool_result_first_delivery: z
    .enum(["full", "gated"])
    .default("gated")
    .describe(
      '"gated" (the default): the gate may offload a medium or large result on the turn it arrives, where its price says so (the model then sees only its structural stub); "full": every result is sent in full once.',
    ),
  tool_result_first_delivery_min_chars: z
    .int()
    .min(0)
    .nullable()
    .default(null)
    .describe(
      'With first delivery "gated": the smallest fresh result the gate weighs (null: every result over tool_result_compaction_size_chars, medium and large). Raise it to the large threshold to stub only large results on arrival; results at or below the size floor are never stubbed.',
    ),
  tool_result_first_delivery_recall_margin: z
    .number()
    .min(0)
    .max(10)
    .default(1)
    .describe(
      "Recall hops a first delivery (or a breakpoint move, which binds its stub on arrival too) must pay for beyond the expected ones: a result the model has not seen may be recalled many times (a file it is editing), and one such result must not make its session dearer.",
    ),
  tool_result_count_unsent: z
    .boolean()
    .default(true)
    .describe(
      "Proxy and offloadFetch: ask the provider's free token-counting endpoint (Anthropic's messages/count_tokens, OpenAI's responses/input_tokens), beside the call and with the client's credentials, for the tokens of results stubbed on the call they arrive, which no usage ever measures, so the billed saving prices them as counted rather than estimated. Off: those results' tokens stay estimated and the provider never sees their text.",
    ),
  tool_result_offload_shadow: z
    .boolean()
    .default(false)
    .describe(
      "Shadow mode (needs the umbrella switch): decide, ledger bodies and record every decision as usual, but return the request unchanged (the very same bytes) and declare no recall tool, so a deployment measures what it would save at no risk. Decisions recorded in shadow stay sticky when shadow is turned off.",
    ),
  tool_result_context_pressure_share: z
    .number()
    .min(0.1)
    .max(1)
    .nullable()
    .default(0.5)
    .describe(
      "Context-pressure mode: when a request reaches this share of its window (tool_result_context_window_tokens), offload settled results oldest-first in one batch (one cache rewrite, recallable) down to the target share. null: off.",
    ),
  tool_result_context_pressure_target: z
    .number()
    .min(0.05)
    .max(0.95)
    .default(0.2)
    .describe("The share of the window a context-pressure batch brings the request down to."),
  tool_result_context_window_tokens: z
    .int()
    .min(1000)
    .nullable()
    .default(null)
    .describe(
      "The window context-pressure mode measures against, in tokens; null: the model's context window, or its long-context price threshold when lower. Set it to the window your agent compacts against when that is lower (Claude Code's CLAUDE_CODE_AUTO_COMPACT_WINDOW), or to a 1M-token beta's.",
    ),
  tool_result_pricing_model: z
    .string()
    .min(1)
    .max(FIELD_LIMITS.model)
    .nullable()
    .default(null)
    .describe(
      "Price as this model instead of the request's `model` (for proxies with custom model names).",
    ),
  tool_result_tool_rules: z
    .array(ToolRuleSchema)
    .max(TOOL_RULES_MAX)
    .default([])
    .describe(
      'Per-tool rules, first match by tool name wins (exact, or a glob with `*`): `offload: "never"` keeps a tool\'s results full; the others set its size floor, large threshold, keep_last_n, recall probability or first delivery. A layer\'s rules replace the layers\' below. E.g. [{"tool":"web_*","offload":"never"}].',
    ),
  attachment_policy: z
    .enum(["native", "extract", "extract_after_first"])
    .default("native")
    .describe(
      'Document and image blocks (Anthropic): "native" sends them as they are; "extract" replaces a document by its extracted text from the turn it arrives; "extract_after_first" sends it natively on that turn and as text from the next. In both extract policies an image becomes a short placeholder once it is no longer hot. Needs the umbrella switch.',
    ),
  attachment_image_hot_turns: z
    .int()
    .min(1)
    .max(1000)
    .default(1)
    .describe("Turns an image stays native, counting the one it arrives on (extract policies)."),
  attachment_max_pages: z
    .int()
    .min(1)
    .max(1000)
    .default(100)
    .describe(
      "PDF pages read for a replacement; a longer document stays native (nothing is dropped). Bounds the CPU a turn spends.",
    ),
  attachment_ocr: z
    .boolean()
    .default(false)
    .describe(
      "Extract policies: read an image's text by OCR when it leaves its hot turns, and carry the text in its placeholder when that is cheaper over the horizon than the image (needs the deployment's OFFLOAD_OCR=on, or an engine plugged into compact()).",
    ),
  attachment_max_chars: z
    .int()
    .min(1000)
    .max(2_000_000)
    .default(400_000)
    .describe("Longest extracted text that replaces a document; a longer one stays native."),
};

export const OffloadConfigSchema = z.strictObject(fields);
export type OffloadConfig = z.infer<typeof OffloadConfigSchema>;
export type OffloadConfigInput = z.input<typeof OffloadConfigSchema> & { keep_last_n?: number };
/**
 * A config as code writes it, the type `compact` checks against: every field optional, and a field whose values
 * are a few strings takes any string, because a config built in a variable first widens "gated" to `string`
 * (the schema still checks the value at run time).
 */
export type OffloadConfigLike = {
  [K in keyof OffloadConfigInput]?: OffloadConfigInput[K] extends infer T
    ? T extends string
      ? string
      : T
    : never;
};

/**
 * What `compact` accepts for a config of type `C`: a key that is not a config field (a typo) becomes `never`,
 * so it fails to compile even in a config built in a variable, where TypeScript's excess-property check does not
 * look; a string literal must be one of its field's values; a `string` (widened) or a record of unknown keys
 * (parsed JSON) passes, for the schema to check at run time.
 */
export type CheckedConfig<C> = {
  [K in keyof C]: string extends K
    ? unknown
    : K extends keyof OffloadConfigInput
      ? NonNullable<C[K]> extends string
        ? string extends NonNullable<C[K]>
          ? C[K]
          : OffloadConfigInput[K]
        : OffloadConfigInput[K]
      : never;
};

/**
 * Accepted alternative names: `keep_last_n` is the short name clients already use for the hot
 * window.
 */
const ALIASES: Record<string, keyof OffloadConfig> = {
  keep_last_n: "tool_result_compaction_keep_last_n",
};

/**
 * Every field optional and without defaults: for partial overrides (session, request) that are
 * merged.
 */
export const OffloadConfigPatchSchema = z.strictObject(
  Object.fromEntries(
    Object.entries(fields).map(([k, v]) => [k, (v as z.ZodDefault<z.ZodType>).unwrap().optional()]),
  ) as {
    [K in keyof typeof fields]: z.ZodOptional<ReturnType<(typeof fields)[K]["unwrap"]>>;
  },
);
export type OffloadConfigPatch = z.infer<typeof OffloadConfigPatchSchema>;

export const DEFAULT_CONFIG: OffloadConfig = OffloadConfigSchema.parse({});

/**
 * The settings a deployment turns on (README, "Quick start"): compaction and offload, every other
 * field at its default. What `edge-offload eval` tests unless told otherwise.
 */
export const RECOMMENDED_CONFIG: Readonly<OffloadConfigPatch> = Object.freeze({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
});

/**
 * The deployment layer a service runs with when its operator set none (OFFLOAD_DEFAULT_CONFIG unset):
 * shadow mode, so a session nobody configured is decided and reported ("would save $X; one line to go
 * live") but sent as the client sent it. Why shadow: docs/config.md. wrangler.toml ships the same layer
 * (a test keeps them equal); `edge-offload serve` uses this one.
 */
export const SHIPPED_DEPLOYMENT_CONFIG: Readonly<OffloadConfigPatch> = Object.freeze({
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_offload_shadow: true,
});

/**
 * Validate a config patch (aliases folded in), throwing an `invalid_config` OffloadError that names
 * the field. `where` prefixes the path so the caller can tell which layer (header, session, vars)
 * was wrong.
 */
export function parseConfigPatch(input: unknown, where = "config"): OffloadConfigPatch {
  if (input === undefined || input === null) return {};
  if (typeof input !== "object" || Array.isArray(input)) {
    throw new OffloadError("invalid_config", `${where} must be a JSON object`, { path: where });
  }
  const folded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    const canonical = ALIASES[key];
    if (canonical !== undefined) {
      if (canonical in input)
        throw new OffloadError(
          "invalid_config",
          `${where}: give either ${key} or ${canonical}, not both`,
          { path: formatPath([key], where) },
        );
      folded[canonical] = value;
    } else folded[key] = value;
  }
  const result = OffloadConfigPatchSchema.safeParse(folded);
  if (!result.success) throw zodError("invalid_config", result.error, { root: where });
  return result.data as OffloadConfigPatch;
}

/**
 * Whether these layers (each already validated), lowest first, turn compaction on, without
 * resolving them: a turn reads its request before it asks its session only when the layers it knows
 * then say so.
 */
export function compactionEnabledIn(...layers: readonly OffloadConfigPatch[]): boolean {
  let on = DEFAULT_CONFIG.tool_result_compaction_enabled;
  for (const layer of layers)
    if (layer.tool_result_compaction_enabled !== undefined)
      on = layer.tool_result_compaction_enabled;
  return on;
}

/** Defaults, then each layer in order (later wins). Each layer is validated on its own. */
export function resolveConfig(...layers: unknown[]): OffloadConfig {
  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  layers.forEach((layer, i) => {
    for (const [k, v] of Object.entries(
      parseConfigPatch(layer, layers.length > 1 ? `config[${i}]` : "config"),
    )) {
      if (v !== undefined) merged[k] = v;
    }
  });
  return merged as OffloadConfig;
}
