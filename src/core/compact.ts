/**
 * The turn transform's entry. Given a provider request, the session's sticky decisions and a
 * config, it returns the request to send instead: settled, non-hot tool results that the size tiers
 * and the net-saving gate select are replaced by stubs (offload) or head previews (size-only path),
 * each body first made durable in the ledger. The output is spliced into the original text, so
 * untouched bytes stay untouched, and with nothing to change the very same string (or object) comes
 * back. The steps of a turn live in turn/.
 */
import { type CheckedConfig, type OffloadConfigLike, resolveConfig } from "../config.ts";
import { OffloadError } from "../errors.ts";
import { aiSdkAdapter } from "./formats/ai-sdk.ts";
import { anthropicAdapter } from "./formats/anthropic.ts";
import { openaiChatAdapter } from "./formats/openai-chat.ts";
import { openaiResponsesAdapter } from "./formats/openai-responses.ts";
import type { Edit, FormatAdapter, RequestAnalysis } from "./formats/types.ts";
import { unpricedModel } from "./gate.ts";
import { DEV_SECRET } from "./memid.ts";
import type { AttachmentExtractor, OffloadStore, Turn } from "./ports.ts";
import { type PreparedRequest, prepareRequest, turnKeys } from "./prepare.ts";
import { resolveModel } from "./pricing.ts";
import { describeCause, type Problem } from "./problems.ts";
import { type SessionInput, sessionRef } from "./session.ts";
import type { Decision } from "./turn/context.ts";
import { type CompactReport, emptyReport, shadowReport } from "./turn/report.ts";
import { runTurn } from "./turn/run.ts";
import type { Format } from "./types.ts";

export interface CompactInput<
  R extends string | object,
  C extends OffloadConfigLike = OffloadConfigLike,
> {
  /**
   * The request's format: "anthropic" (the default), "openai-chat", "openai-responses" or "ai-sdk".
   */
  format?: Format;
  /** The provider request, parsed or as raw JSON text. */
  request: R;
  session: SessionInput;
  /**
   * A config object (defaults fill the rest) or an already resolved OffloadConfig. A field that
   * does not exist is a type error here and an `invalid_config` OffloadError at run time.
   */
  config?: C & CheckedConfig<C>;
  /**
   * Where the session lives: `compact` begins the turn, commits it and finishes it. A caller that
   * began the turn itself (to read the session's config first) passes `turn` instead, and
   * finishes it.
   */
  store?: OffloadStore;
  turn?: Turn;
  /** Deployment secret that keys mem_ids. */
  secret?: string;
  /**
   * The attachment policy's extractor (config `attachment_policy`). Without one, documents stay
   * native and are tried again on a later turn; the library's `compact` plugs in the default
   * extractor.
   */
  extractor?: AttachmentExtractor | undefined;
  /**
   * The request already read by `prepareRequest` (its `raw` is `request`, as text): not parsed
   * again.
   */
  prepared?: PreparedRequest | undefined;
  /**
   * The caller answers the model's recall calls itself, in extra provider calls whose exchange the
   * client's history does not keep (the AI SDK middleware; the proxy puts them back itself). A model with
   * preserved thinking would reject the next request (its thinking after the exchange no longer
   * follows what it was produced after), so on such a model nothing new is offloaded.
   */
  hops?: boolean;
  /**
   * The caller sends the `anthropic-beta` values the report names (`report.anthropic_beta`) with the
   * request, as the proxy and the fetch wrapper do. Only then may the turn use what needs one (the recall
   * tool declared mid-conversation); without it the request never needs a beta the client did not ask for.
   */
  sendsBetas?: boolean;
}

export interface CompactOutput<R extends string | object> {
  request: R;
  changed: boolean;
  decisions: Decision[];
  report: CompactReport;
}

const ADAPTERS: Record<Format, FormatAdapter> = {
  anthropic: anthropicAdapter,
  "openai-chat": openaiChatAdapter,
  "openai-responses": openaiResponsesAdapter,
  "ai-sdk": aiSdkAdapter,
};

export function adapterFor(format: Format): FormatAdapter {
  const adapter = Object.hasOwn(ADAPTERS, format) ? ADAPTERS[format] : undefined;
  if (adapter === undefined)
    throw new OffloadError("invalid_argument", `unknown format ${JSON.stringify(format)}`, {
      path: "format",
    });
  return adapter;
}

export async function compact<
  R extends string | object,
  C extends OffloadConfigLike = OffloadConfigLike,
>(input: CompactInput<R, C>): Promise<CompactOutput<R>> {
  const format = input.format ?? "anthropic";
  const adapter = adapterFor(format);
  const config = resolveConfig(input.config ?? {});
  const ref = sessionRef(input.session);
  const enabled = config.tool_result_compaction_enabled;
  const offload = enabled && config.tool_result_offload_enabled;

  if (!enabled) {
    // Off means off: no parse, no store access, the same value back.
    return {
      request: input.request,
      changed: false,
      decisions: [],
      report: emptyReport(format, false, false),
    };
  }

  const raw = typeof input.request === "string" ? input.request : JSON.stringify(input.request);
  if (typeof raw !== "string")
    throw new OffloadError("invalid_request", "the request must be a JSON object or its text");
  const prepared =
    input.prepared !== undefined && input.prepared.raw === raw && input.prepared.format === format
      ? input.prepared
      : prepareRequest(format, adapter, raw);
  const { root } = prepared;
  if ("invalid" in prepared.analysis) {
    // Valid JSON in a shape the adapter cannot read: the request goes out as it came, with the
    // reason (the provider judges it; a proxy must never refuse what the provider would accept).
    const e = prepared.analysis.invalid;
    const problem: Problem = {
      code: "invalid_request",
      message: `${e.message}; request passed through unchanged`,
      ...(e.path === undefined ? {} : { path: e.path }),
    };
    const report = { ...emptyReport(format, true, offload), errors: [problem] };
    return { request: input.request, changed: false, decisions: [], report };
  }
  const analysis: RequestAnalysis = prepared.analysis;
  const model = config.tool_result_pricing_model ?? analysis.model;
  const price = resolveModel(model);
  const problems: Problem[] = (analysis.notes ?? []).map(
    // Parts the adapter could not place were left as they are: the report says where.
    (note): Problem => ({ code: "unplaced", message: note.message, path: note.path }),
  );
  // An unpriced model never offloads nor anchors: say so, naming the config key that prices it.
  if (price === null && (offload || config.tool_result_medium_tier === "cache_anchor"))
    problems.push({ code: "unpriced_model", message: unpricedModel(model) });
  let turn = input.turn;
  if (turn === undefined) {
    if (input.store === undefined)
      throw new OffloadError("invalid_argument", "compact needs a store (or a begun turn)", {
        path: "store",
      });
    try {
      turn = await input.store.beginTurn(ref, turnKeys(prepared));
    } catch (cause) {
      // Without the sticky decisions any change could contradict an earlier turn: pass the
      // request through.
      const report = {
        ...emptyReport(format, true, offload),
        model: analysis.model,
        results: analysis.sites.length,
        errors: [
          ...problems,
          {
            code: "storage_error" as const,
            message: `session state unavailable, request passed through (${describeCause(cause)})`,
          },
        ],
      };
      return { request: input.request, changed: false, decisions: [], report };
    }
  }
  const { edits, decisions, report } = await runTurn({
    raw,
    root,
    analysis,
    adapter,
    format,
    config,
    ref,
    turn,
    secret: input.secret ?? DEV_SECRET,
    offload,
    model,
    price,
    extractor: input.extractor,
    problems,
    loaded: turn,
    toolDeclared: false,
    hops: input.hops === true,
    sendsBetas: input.sendsBetas === true,
  });
  // A turn begun here ends here (its log line is written now, when the commit left it to here).
  if (input.turn === undefined)
    try {
      await turn.finish();
    } catch (cause) {
      report.errors.push({
        code: "storage_error",
        message: `the turn's log line could not be written (${describeCause(cause)})`,
      });
    }
  // Shadow mode: the turn above ran in full (bodies ledgered, decisions committed, its log marked
  // shadow), but the caller gets its own request back, the very same value, and no recall tool is
  // declared. Decisions taken in shadow stay sticky: once shadow is off, they are rendered (stubs
  // and all) like any earlier decision, and the recall tool, recorded as declared where a live turn
  // would have declared it, is added with them.
  if (config.tool_result_offload_shadow)
    return {
      request: input.request,
      changed: false,
      decisions,
      report: shadowReport(report, analysis.has_recall_tool),
    };
  if (edits.length === 0) return { request: input.request, changed: false, decisions, report };
  const text = splice(raw, edits);
  const request = (typeof input.request === "string" ? text : JSON.parse(text)) as R;
  return { request, changed: true, decisions, report };
}

/** Apply non-overlapping edits to `raw` (one pass; untouched spans are copied as they are). */
export function splice(raw: string, edits: readonly Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  const parts: string[] = [];
  let at = 0;
  for (const e of sorted) {
    if (e.start < at) throw new OffloadError("internal", "overlapping edits");
    parts.push(raw.slice(at, e.start), e.text);
    at = e.end;
  }
  parts.push(raw.slice(at));
  return parts.join("");
}
