/**
 * The turn transform. Given a provider request, the session's sticky decisions and a config, it returns the
 * request to send instead: settled, non-hot tool results that the size tiers and the net-saving gate select
 * are replaced by stubs (offload) or head previews (size-only path), each body first made durable in the
 * ledger. The output is spliced into the original text, so untouched bytes stay untouched, and with nothing
 * to change the very same string (or object) comes back.
 */
import { type OffloadConfig, resolveConfig } from "../config.ts";
import { OffloadError } from "../errors.ts";
import type { LoadedState, OffloadStore } from "../store/port.ts";
import { learnedHorizon, learnedRecallProbability, unseenRecallProbability } from "./adaptive.ts";
import { type AttachmentOptions, type AttachmentReport, AttachmentTurn } from "./attachments.ts";
import { cacheCold, waitsForColdCache } from "./cold.ts";
import { anthropicAdapter } from "./formats/anthropic.ts";
import { openaiChatAdapter } from "./formats/openai-chat.ts";
import { openaiResponsesAdapter } from "./formats/openai-responses.ts";
import type {
  AnchorSlot,
  Edit,
  FormatAdapter,
  RequestAnalysis,
  ToolResultSite,
} from "./formats/types.ts";
import { type GateInput, offloadGate } from "./gate.ts";
import {
  decodeString,
  getMember,
  type JsonNode,
  parseJsonSpans,
  stringLength,
} from "./json/scan.ts";
import { gateVerdicts, shadowReport } from "./measure.ts";
import { bodyDigest, DEV_SECRET, memIdOf } from "./memid.ts";
import { type ModelPrice, ratesFor, resolveModel, usd } from "./pricing.ts";
import { RECALL_TOOL_NAME, recallToolDefinition } from "./recall-tool.ts";
import { type SessionInput, sessionRef } from "./session.ts";
import { structureOf } from "./structure.ts";
import { type RecallArgs, renderCompacted, renderRecallMarker, renderStub } from "./stub.ts";
import { type ContentKind, detectKind, estimateTokens, REQUEST_CHARS_PER_TOKEN } from "./tokens.ts";
import type {
  Format,
  GateResult,
  ResultRecord,
  SessionRef,
  Tier,
  TurnDecision,
  TurnLog,
} from "./types.ts";

export interface CompactInput<R extends string | object> {
  /** The request's format: "anthropic" (the default), "openai-chat" or "openai-responses". */
  format?: Format;
  /** The provider request, parsed or as raw JSON text. */
  request: R;
  session: SessionInput;
  /** A config object (defaults fill the rest) or an already resolved OffloadConfig. */
  config?: unknown;
  store: OffloadStore;
  /** Deployment secret that keys mem_ids. */
  secret?: string;
  /** The attachment policy's extractor and OCR (config `attachment_policy`; see attachments.ts). */
  attachments?: AttachmentOptions;
}

/** One result's decision on this turn (the same shape the session report keeps for the last turn). */
export type Decision = TurnDecision;

export interface CompactError {
  type: "storage_error" | "conflict";
  message: string;
  tool_use_id?: string;
}

export interface CompactReport {
  format: Format;
  enabled: boolean;
  offload: boolean;
  model: string | null;
  /** Price-table entry used by the gate, or null (unknown model: nothing is offloaded). */
  priced_as: string | null;
  /** Assistant turns in the request. */
  turn: number;
  results: number;
  kept: number;
  compacted: number;
  offloaded: number;
  new_decisions: number;
  /** Estimated prompt tokens with every result full, and as returned. */
  tokens_before: number;
  tokens_after: number;
  saved_tokens: number;
  /** Estimated dollars this request saves against sending every result full. */
  saved_usd: number;
  recall_tool: "added" | "present" | "none";
  /** Shadow mode: the request came back unchanged; the counts, tokens and saving are what offload would have done. */
  shadow: boolean;
  /** The advancing cache anchor (tool_result_medium_tier "cache_anchor"): whether one was placed, and why. */
  anchor: { placed: boolean; ttl: "5m" | "1h" | null; reason: string } | null;
  /** Document and image blocks under the attachment policy (null when it is "native"); counted in the totals above. */
  attachments: AttachmentReport | null;
  errors: CompactError[];
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
};

export function adapterFor(format: Format): FormatAdapter {
  const adapter = Object.hasOwn(ADAPTERS, format) ? ADAPTERS[format] : undefined;
  if (adapter === undefined)
    throw new OffloadError("invalid_argument", `unknown format ${JSON.stringify(format)}`, {
      path: "format",
    });
  return adapter;
}

export async function compact<R extends string | object>(
  input: CompactInput<R>,
): Promise<CompactOutput<R>> {
  const format = input.format ?? "anthropic";
  const adapter = adapterFor(format);
  const config = resolveConfig(input.config ?? {});
  const ref = sessionRef(input.session);
  const enabled = config.tool_result_compaction_enabled;
  const offload = enabled && config.tool_result_offload_enabled;

  if (!enabled) {
    // Off means off: no parse, no store access, the same value back (invariant 1).
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
  const root = parseJsonSpans(raw);
  const analysis = adapter.analyze(raw, root);
  const turn = new Transform({
    raw,
    root,
    analysis,
    adapter,
    config,
    ref,
    store: input.store,
    secret: input.secret ?? DEV_SECRET,
    offload,
    attachments: input.attachments ?? {},
  });
  const { edits, decisions, report } = await turn.run(format);
  // Shadow mode: the turn above ran in full (bodies ledgered, decisions committed, its log marked shadow), but
  // the caller gets its own request back, the very same value, and no recall tool is declared. Decisions taken
  // in shadow stay sticky: once shadow is off, they are rendered (stubs and all) like any earlier decision, and
  // the recall tool, recorded as declared where a live turn would have declared it, is added with them.
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

/** The report of a turn that decided nothing (compaction off, or the session state unreadable). */
export function emptyReport(format: Format, enabled: boolean, offload: boolean): CompactReport {
  return {
    format,
    enabled,
    offload,
    model: null,
    priced_as: null,
    turn: 0,
    results: 0,
    kept: 0,
    compacted: 0,
    offloaded: 0,
    new_decisions: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_tokens: 0,
    saved_usd: 0,
    recall_tool: "none",
    shadow: false,
    anchor: null,
    attachments: null,
    errors: [],
  };
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

interface Outcome {
  decision: Decision;
  /** Replacement text for the result, when it differs from what the request holds. */
  replacement?: string;
}

interface TurnContext {
  raw: string;
  root: JsonNode;
  analysis: RequestAnalysis;
  adapter: FormatAdapter;
  config: OffloadConfig;
  ref: SessionRef;
  store: OffloadStore;
  secret: string;
  offload: boolean;
  attachments: AttachmentOptions;
}

/** One turn's work; a class only to share the request's context between the steps. */
class Transform {
  readonly errors: CompactError[] = [];
  readonly raw: string;
  readonly root: JsonNode;
  readonly analysis: RequestAnalysis;
  readonly adapter: FormatAdapter;
  readonly config: OffloadConfig;
  readonly ref: SessionRef;
  readonly store: OffloadStore;
  readonly secret: string;
  readonly offload: boolean;
  readonly price: ModelPrice | null;
  /** The recall tool is (or will be, this turn) in the request's tools. */
  toolDeclared = false;
  loaded: LoadedState = { records: new Map(), recall_declared: false };
  anchor: CompactReport["anchor"] = null;
  /** Document and image blocks under the attachment policy (inert when it is "native"). */
  readonly media: AttachmentTurn;

  constructor(ctx: TurnContext) {
    this.raw = ctx.raw;
    this.root = ctx.root;
    this.analysis = ctx.analysis;
    this.adapter = ctx.adapter;
    this.config = ctx.config;
    this.ref = ctx.ref;
    this.store = ctx.store;
    this.secret = ctx.secret;
    this.offload = ctx.offload;
    this.price = resolveModel(ctx.config.tool_result_pricing_model ?? ctx.analysis.model);
    this.media = new AttachmentTurn({
      ...ctx,
      price: this.price,
      options: ctx.attachments,
      errors: this.errors,
    });
  }

  async run(
    format: Format,
  ): Promise<{ edits: Edit[]; decisions: Decision[]; report: CompactReport }> {
    const { sites } = this.analysis;
    const ids = sites.map((s) => s.tool_use_id);
    const toolNames = this.config.tool_result_offload_adaptive
      ? [...new Set(sites.map((s) => s.tool_name))]
      : [];
    let loaded: LoadedState;
    try {
      loaded = await this.store.load(
        this.ref,
        [...ids, ...(await this.media.identify())],
        toolNames,
      );
      this.loaded = loaded;
    } catch (cause) {
      // Without the sticky decisions any change could contradict an earlier turn: pass the request through.
      this.errors.push({
        type: "storage_error",
        message: `session state unavailable, request passed through (${describe(cause)})`,
      });
      const report = {
        ...emptyReport(format, true, this.offload),
        errors: this.errors,
        model: this.analysis.model,
        results: sites.length,
      };
      return { edits: [], decisions: [], report };
    }

    const hotFrom = sites.length - this.config.tool_result_compaction_keep_last_n;
    // Once declared in a session the tool stays (stubs point at it); "eager" declares it with the first enabled turn.
    this.toolDeclared =
      loaded.recall_declared ||
      this.analysis.has_recall_tool ||
      (this.offload && this.config.tool_result_recall_tool_declaration === "eager");
    const outcomes = new Map<ToolResultSite, Outcome>();
    const fresh: { site: ToolResultSite; record: ResultRecord }[] = [];

    // One result at a time: a first decision parses its body, and a 128 MB isolate should hold one at once.
    for (const site of sites) {
      const record = loaded.records.get(site.tool_use_id);
      if (record !== undefined) outcomes.set(site, await this.replay(site, record));
      else if (site.index >= hotFrom || !site.settled) {
        // First delivery (opt-in): a large fresh result may be offloaded before the model ever reads it.
        const decided = this.firstDeliveryCandidate(site) ? await this.decide(site, true) : null;
        if (decided?.record !== undefined) {
          fresh.push({ site, record: decided.record });
          outcomes.set(site, decided.outcome);
        } else {
          const kept = this.pending(site, site.index >= hotFrom);
          const gate = decided?.outcome.decision.gate;
          outcomes.set(
            site,
            gate === undefined
              ? kept
              : { decision: { ...kept.decision, gate, reason: decided!.outcome.decision.reason } },
          );
        }
      } else {
        const decided = await this.decide(site);
        if (decided.record !== undefined) fresh.push({ site, record: decided.record });
        outcomes.set(site, decided.outcome);
      }
    }

    await this.media.decide(loaded.records);

    const declare = this.toolDeclared && (this.offload || loaded.recall_declared);
    const toolTokens =
      declare && !this.analysis.has_recall_tool
        ? recallToolTokens(format, this.config.tool_result_recall_mode)
        : 0;
    const log = this.log(sites, outcomes, fresh.length, toolTokens);
    try {
      const decisions = sites.map((s) => outcomes.get(s)!.decision);
      const result = await this.store.commit(this.ref, {
        records: [...fresh.map((f) => f.record), ...this.media.records()],
        recall_declared: declare,
        log,
        decisions,
      });
      // First writer wins: where a concurrent turn decided a result first, render its decision instead.
      for (const f of fresh) {
        const standing = result.records.get(f.record.tool_use_id);
        if (standing !== undefined && !sameDecision(standing, f.record))
          outcomes.set(f.site, await this.replay(f.site, standing));
      }
      await this.media.settle(result.records);
    } catch (cause) {
      // Unsaved decisions would not be sticky: keep those results full this turn (a later turn decides again).
      this.errors.push({
        type: "storage_error",
        message: `decisions could not be saved; new results kept full (${describe(cause)})`,
      });
      for (const f of fresh)
        outcomes.set(
          f.site,
          this.pending(f.site, false, "kept full: the decision could not be saved"),
        );
      this.media.unsaved();
    }

    const edits: Edit[] = [];
    for (const site of sites) {
      const o = outcomes.get(site)!;
      if (o.replacement !== undefined) {
        if (site.content === undefined) continue;
        edits.push({
          start: site.content.start,
          end: site.content.end,
          text: this.adapter.renderContent(
            this.raw,
            site,
            o.replacement,
            this.media.overridesIn(site.index),
          ),
        });
      }
    }
    edits.push(
      ...this.media.edits(
        (i) =>
          outcomes.get(sites[i]!)!.replacement !== undefined && sites[i]!.content !== undefined,
      ),
    );
    let recallTool: CompactReport["recall_tool"] = this.analysis.has_recall_tool
      ? "present"
      : "none";
    if (declare && !this.analysis.has_recall_tool) {
      edits.push(
        this.adapter.declareRecallTool(this.raw, this.root, this.config.tool_result_recall_mode),
      );
      recallTool = "added";
    }
    if (this.config.tool_result_medium_tier === "cache_anchor") {
      const anchor = this.placeAnchor(sites, outcomes);
      if (anchor !== null && !this.media.absorb(anchor)) edits.push(anchor);
    }
    const decisions = sites.map((s) => outcomes.get(s)!.decision);
    return {
      edits,
      decisions,
      report: this.report(
        format,
        decisions,
        fresh.length,
        recallTool,
        this.log(sites, outcomes, fresh.length, toolTokens),
      ),
    };
  }

  /** Decoded chars of a result without decoding it (escaped strings are counted once). */
  charsOf(site: ToolResultSite): number {
    let n = Math.max(0, site.texts.length - 1);
    for (const t of site.texts) n += stringLength(this.raw, t);
    return n;
  }

  firstDeliveryCandidate(site: ToolResultSite): boolean {
    return (
      this.offload &&
      this.config.tool_result_first_delivery === "gated" &&
      !site.settled &&
      site.tool_name !== RECALL_TOOL_NAME &&
      this.charsOf(site) >=
        (this.config.tool_result_first_delivery_min_chars ??
          this.config.tool_result_large_offload_threshold_chars)
    );
  }

  /**
   * The advancing cache anchor (medium tier "cache_anchor"): one breakpoint at the end of the last block whose
   * bytes are final — the end of the prompt, or just before a fresh result that may still be stubbed once
   * settled — so everything the model has read is billed at cache-read price next turn. The client's own
   * breakpoints and TTLs are kept; nothing is added when the client already advances a breakpoint or uses
   * automatic caching, when 4 breakpoints are set, below the model's minimum cacheable length, or when no
   * TTL is cheaper than not caching at the session's observed gap between turns.
   */
  placeAnchor(
    sites: readonly ToolResultSite[],
    outcomes: Map<ToolResultSite, Outcome>,
  ): Edit | null {
    const a = this.analysis;
    const skip = (reason: string): null => {
      this.anchor = { placed: false, ttl: null, reason };
      return null;
    };
    if (this.adapter.anchorEdit === undefined || a.anchor_slots.length === 0)
      return skip("no block can carry a breakpoint");
    if (a.auto_cache) return skip("the client uses automatic caching");
    if (a.breakpoints.length >= 4) return skip("the request already has 4 breakpoints");
    const clientLast = a.breakpoints[a.breakpoints.length - 1];
    if (clientLast !== undefined && clientLast.position > a.last_message_position)
      return skip("the client already advances a breakpoint");
    if (this.price === null) return skip("unknown model: no price, no minimum length");
    // Fresh results that a later turn may still replace would make the cached bytes past them short-lived.
    const unfinal = (i: number | undefined): boolean => {
      if (i === undefined) return false;
      const site = sites[i]!;
      const o = outcomes.get(site)!;
      if (
        o.decision.sticky ||
        o.decision.action !== "kept" ||
        site.settled ||
        site.tool_name === RECALL_TOOL_NAME
      )
        return false;
      return this.offload
        ? o.decision.chars >= this.config.tool_result_large_offload_threshold_chars
        : o.decision.chars > this.config.tool_result_compaction_size_chars;
    };
    let slot: AnchorSlot | undefined;
    for (const s of a.anchor_slots) {
      if (unfinal(s.site)) break;
      slot = s;
    }
    if (slot === undefined) return skip("every recent block may still change");
    const prefix = Math.round(slot.position / REQUEST_CHARS_PER_TOKEN);
    if (prefix < this.price.min_cacheable_tokens)
      return skip(
        `below the model's minimum cacheable length (${this.price.min_cacheable_tokens} tokens)`,
      );
    const ttl = this.chooseTtl(prefix);
    if (ttl === null)
      return skip("at this session's gap between turns no TTL is cheaper than not caching");
    this.anchor = { placed: true, ttl, reason: `cache breakpoint at ${prefix} tokens` };
    return this.adapter.anchorEdit(this.raw, slot, ttl);
  }

  /**
   * Steady per-turn cost of the prefix under each choice, at the session's observed gap: a breakpoint whose
   * TTL outlives the gap reads the prefix and writes the new turn; one that expires rewrites everything; no
   * breakpoint pays input for what the client's own breakpoints do not cover. The API wants longer TTLs
   * before shorter ones, so a 1-hour anchor is possible only after 1-hour client breakpoints.
   */
  chooseTtl(prefixTokens: number): "5m" | "1h" | null {
    const rates = ratesFor(this.price!, prefixTokens);
    const gap = this.loaded.gap_seconds ?? 0;
    const fresh = Math.max(
      1,
      Math.round(
        (this.analysis.prompt_chars - this.analysis.last_message_position) /
          REQUEST_CHARS_PER_TOKEN,
      ),
    );
    const covered = Math.round(
      (this.analysis.breakpoints[this.analysis.breakpoints.length - 1]?.position ?? 0) /
        REQUEST_CHARS_PER_TOKEN,
    );
    const cost = (write: number, ttlSeconds: number) =>
      // a margin of 10%: turns close to the TTL often miss it
      gap <= ttlSeconds * 0.9
        ? prefixTokens * rates.cache_read + fresh * write
        : (prefixTokens + fresh) * write;
    const options: ["5m" | "1h" | null, number][] = [
      [
        null,
        covered * rates.cache_read + Math.max(0, prefixTokens + fresh - covered) * rates.input,
      ],
      ["5m", cost(rates.cache_write_5m, 300)],
    ];
    if (this.analysis.breakpoints.every((b) => b.ttl === "1h"))
      options.push(["1h", cost(rates.cache_write_1h, 3600)]);
    return options.reduce((best, o) => (o[1] < best[1] ? o : best))[0];
  }

  /** The text of a result as measured and offloaded: its text pieces, joined by newlines. */
  textOf(site: ToolResultSite): string {
    return site.texts.map((t) => decodeString(this.raw, t)).join("\n");
  }

  rawLength(site: ToolResultSite): number {
    return site.content === undefined ? 0 : site.content.end - site.content.start;
  }

  /** Render a result from its sticky record (invariant 3), whether the request holds the body or our text. */
  async replay(site: ToolResultSite, record: ResultRecord): Promise<Outcome> {
    const decision: Decision = {
      tool_use_id: site.tool_use_id,
      tool_name: record.tool_name,
      path: site.path,
      tier: record.tier,
      action: record.action,
      mem_id: record.mem_id,
      chars: record.chars,
      tokens: record.tokens,
      sent_tokens: record.action === "kept" ? record.tokens : record.rendered_tokens,
      sticky: true,
      reason: record.reason,
      ...(record.gate === null ? {} : { gate: record.gate }),
    };
    if (record.action === "kept" || record.rendered === null) return { decision };
    const rawLen = this.rawLength(site);
    // Already our text? Only a short content can be (an escape takes at most 6 raw chars per unit).
    if (rawLen <= record.rendered.length * 6 + 64 && this.textOf(site) === record.rendered)
      return { decision };
    if (rawLen === record.raw_chars) return { decision, replacement: record.rendered };
    // Same length check failed (the client re-encoded it, or reused the id): compare the body itself.
    const digest = await bodyDigest(
      this.secret,
      this.ref.tenant,
      this.ref.session,
      this.textOf(site),
    );
    if (digest === record.fingerprint) return { decision, replacement: record.rendered };
    this.errors.push({
      type: "conflict",
      tool_use_id: site.tool_use_id,
      message: "tool_use_id reused with a different body; kept as sent",
    });
    return {
      decision: {
        ...decision,
        action: "kept",
        sent_tokens: estimateTokens(this.textOf(site).length),
        reason: "conflict: the id was decided for a different body",
      },
    };
  }

  measure(site: ToolResultSite): {
    text: string;
    chars: number;
    kind: ContentKind;
    tokens: number;
  } {
    const text = this.textOf(site);
    const kind = detectKind(text);
    return { text, chars: text.length, kind, tokens: estimateTokens(text.length, kind) };
  }

  tierOf(chars: number): Tier {
    if (chars <= this.config.tool_result_compaction_size_chars) return "small";
    return chars >= this.config.tool_result_large_offload_threshold_chars ? "large" : "medium";
  }

  /** Hot or unsettled: kept this turn, decided later (no record). */
  pending(site: ToolResultSite, hot: boolean, why?: string): Outcome {
    const m = this.measure(site);
    return {
      decision: {
        tool_use_id: site.tool_use_id,
        tool_name: site.tool_name,
        path: site.path,
        tier: hot ? "hot" : this.tierOf(m.chars),
        action: "kept",
        mem_id: null,
        chars: m.chars,
        tokens: m.tokens,
        sent_tokens: m.tokens,
        sticky: false,
        reason:
          why ??
          (hot
            ? "hot: among the most recent results"
            : "not settled: the model has not answered after it yet"),
      },
    };
  }

  /** Where the result sits against the cache breakpoints, for the gate. */
  cacheSide(
    site: ToolResultSite,
    stubTokens: number,
  ): { cached_side: boolean; tokens_to_breakpoint: number; cache_ttl: "5m" | "1h" } {
    const bps = this.analysis.breakpoints;
    const last = bps[bps.length - 1];
    if (last === undefined || site.position >= last.position)
      return { cached_side: false, tokens_to_breakpoint: 0, cache_ttl: "5m" };
    const after = site.position + this.rawLength(site);
    const next = bps.find((b) => b.position > site.position) ?? last;
    return {
      cached_side: true,
      tokens_to_breakpoint:
        Math.max(0, Math.round((last.position - after) / REQUEST_CHARS_PER_TOKEN)) + stubTokens,
      cache_ttl: next.ttl,
    };
  }

  /** First sight of a settled, non-hot result (or, opt-in, a fresh large one): tier it, gate it, ledger it. */
  async decide(
    site: ToolResultSite,
    firstDelivery = false,
  ): Promise<{ outcome: Outcome; record?: ResultRecord }> {
    const m = this.measure(site);
    const tier = this.tierOf(m.chars);
    const base = {
      tool_use_id: site.tool_use_id,
      tool_name: site.tool_name,
      tier,
      chars: m.chars,
      tokens: m.tokens,
      kind: m.kind,
      raw_chars: this.rawLength(site),
      turn: this.analysis.assistant_turns,
    };
    const kept = (
      reason: string,
      gate: GateResult | null = null,
    ): { outcome: Outcome; record: ResultRecord } => {
      const record: ResultRecord = {
        ...base,
        action: "kept",
        mem_id: null,
        fingerprint: "",
        rendered: null,
        rendered_tokens: m.tokens,
        reason,
        gate,
      };
      return { outcome: { decision: toDecision(site, record, false) }, record };
    };

    if (tier === "small") return kept("small: at most the size floor");
    if (site.tool_name === RECALL_TOOL_NAME) {
      // Invariant 9: a recall answer is never offloaded to a new mem_id; once settled it becomes a marker.
      const args = parseArgs(site.tool_input_source ?? this.raw, site.tool_input);
      const rendered = renderRecallMarker(m.chars, args);
      const digest = await bodyDigest(this.secret, this.ref.tenant, this.ref.session, m.text);
      const record: ResultRecord = {
        ...base,
        action: "compacted",
        mem_id: typeof args.mem_id === "string" ? args.mem_id : null,
        fingerprint: digest,
        rendered,
        rendered_tokens: estimateTokens(rendered.length),
        reason: "recall answer: shortened to a marker once used",
        gate: null,
      };
      return {
        outcome: { decision: toDecision(site, record, false), replacement: rendered },
        record,
      };
    }

    let gate: GateResult | null = null;
    const structure = this.offload ? structureOf(m.text, m.kind) : null;
    const stubOf = (memId: string): string =>
      renderStub({
        unseen: firstDelivery,
        mem_id: memId,
        tool_name: site.tool_name,
        chars: m.chars,
        tokens: m.tokens,
        structure: structure!,
        body: m.text,
        preview_chars: this.config.tool_result_stub_preview_chars,
        mode: this.config.tool_result_recall_mode,
      });
    if (this.offload) {
      // The seed's pre-filter: only large results reach the fixed-prior gate. A learning gate sees the medium
      // ones too: its recall rate is measured, so a session whose model never recalls stops paying for caution.
      if (tier === "medium" && !this.config.tool_result_offload_adaptive && !firstDelivery)
        return kept("medium: below the offload threshold, kept full");
      const stubTokens = estimateTokens(stubOf(memIdOf("0".repeat(24))).length);
      const side = this.cacheSide(site, stubTokens);
      const contextTokens =
        Math.round((this.analysis.prompt_chars - this.rawLength(site)) / REQUEST_CHARS_PER_TOKEN) +
        stubTokens;
      const lastBp = this.analysis.breakpoints[this.analysis.breakpoints.length - 1];
      const declaration = this.toolDeclared
        ? undefined
        : {
            tool_tokens: recallToolTokens(
              this.adapter.format as Format,
              this.config.tool_result_recall_mode,
            ),
            // Changing `tools` rewrites the cached prompt ahead of the result too (after it is in invalidation).
            prefix_tokens:
              lastBp === undefined
                ? 0
                : Math.round(Math.min(site.position, lastBp.position) / REQUEST_CHARS_PER_TOKEN),
          };
      const { horizon, p } = this.priors(site.tool_name, firstDelivery);
      const gateInput: GateInput = {
        model: this.price,
        result_tokens: m.tokens,
        stub_tokens: stubTokens,
        horizon,
        recall_probability: p,
        first_delivery: firstDelivery,
        ...side,
        context_tokens: contextTokens,
        client_caches: this.analysis.client_caches,
        ...(declaration === undefined ? {} : { tool_declaration: declaration }),
        cache_cold: cacheCold(
          this.adapter.format as Format,
          this.analysis.breakpoints,
          this.loaded.idle_seconds,
        ),
      };
      gate = offloadGate(gateInput);
      if (!gate.fire) {
        // Declined at first delivery: not recorded, so the usual decision follows once the result is settled.
        if (firstDelivery)
          return {
            outcome: {
              decision: {
                ...this.pending(site, false, `first delivery declined: ${gate.reason}`).decision,
                gate,
              },
            },
          };
        // Declined only because the cache is warm: not recorded, so the turn after a lapse weighs it again.
        if (waitsForColdCache(gateInput))
          return {
            outcome: {
              decision: {
                ...this.pending(site, false, `kept while the cache is warm: ${gate.reason}`)
                  .decision,
                gate,
              },
            },
          };
        return kept(`${tier}: ${gate.reason}`, gate);
      }
    }

    const digest = await bodyDigest(this.secret, this.ref.tenant, this.ref.session, m.text);
    const memId = memIdOf(digest);
    const rendered = this.offload
      ? stubOf(memId)
      : renderCompacted({
          mem_id: memId,
          body: m.text,
          chars: m.chars,
          tokens: m.tokens,
          preview_chars: this.config.tool_result_compaction_preview_chars,
          recall_available: false,
        });
    try {
      await this.store.putBody(this.ref, m.text, {
        mem_id: memId,
        tool_use_id: site.tool_use_id,
        tool_name: site.tool_name,
        chars: m.chars,
        tokens: m.tokens,
        kind: structure?.kind ?? m.kind,
        outline: structure?.outline ?? "",
        turn: this.analysis.assistant_turns,
      });
    } catch (cause) {
      // Invariant 5: no stub without a durable body. Not recorded, so a later turn tries again.
      this.errors.push({
        type: "storage_error",
        tool_use_id: site.tool_use_id,
        message: `body not stored, kept full (${describe(cause)})`,
      });
      return { outcome: this.pending(site, false, "kept full: the ledger write failed") };
    }
    if (this.offload) this.toolDeclared = true;
    const record: ResultRecord = {
      ...base,
      action: this.offload ? "offloaded" : "compacted",
      mem_id: memId,
      fingerprint: digest,
      rendered,
      rendered_tokens: estimateTokens(rendered.length),
      reason: this.offload
        ? `${tier}${firstDelivery ? ", first delivery" : ""}: ${gate!.reason}`
        : "size-only path: shortened to a head preview",
      gate,
    };
    return {
      outcome: { decision: toDecision(site, record, false), replacement: rendered },
      record,
    };
  }

  /** Horizon and recall probability for a result of `tool`: the config's, or learned (adaptive). */
  priors(tool: string, firstDelivery: boolean): { horizon: number; p: number } {
    let horizon = this.config.tool_result_offload_horizon_default;
    let p = this.config.tool_result_offload_recall_probability;
    if (this.config.tool_result_offload_adaptive) {
      horizon = learnedHorizon(this.analysis.assistant_turns, horizon);
      p = learnedRecallProbability(
        p,
        horizon,
        this.loaded.tool_stats?.[tool],
        this.loaded.session_tool_stats?.[tool],
      );
    }
    return { horizon, p: firstDelivery ? unseenRecallProbability(p) : p };
  }

  log(
    sites: readonly ToolResultSite[],
    outcomes: Map<ToolResultSite, Outcome>,
    fresh: number,
    toolTokens: number,
  ): TurnLog {
    const t = this.totals(sites, outcomes);
    return {
      turn: this.analysis.assistant_turns,
      results: sites.length,
      kept: t.count.kept,
      compacted: t.count.compacted,
      offloaded: t.count.offloaded,
      new_decisions: fresh,
      tokens_before: t.before,
      tokens_after: t.after + toolTokens,
      saved_usd: t.saved_usd,
      errors: this.errors.length,
      shadow: this.config.tool_result_offload_shadow,
      ...gateVerdicts(sites.map((s) => outcomes.get(s)!.decision)),
    };
  }

  totals(sites: readonly ToolResultSite[], outcomes: Map<ToolResultSite, Outcome>) {
    const count = { kept: 0, compacted: 0, offloaded: 0 };
    let other = this.analysis.prompt_chars;
    let full = 0;
    let sent = 0;
    let savedUsd = 0;
    const rates =
      this.price === null
        ? null
        : ratesFor(this.price, this.analysis.prompt_chars / REQUEST_CHARS_PER_TOKEN);
    const lastBp = this.analysis.breakpoints[this.analysis.breakpoints.length - 1];
    for (const site of sites) {
      const d = outcomes.get(site)!.decision;
      count[d.action]++;
      other -= this.rawLength(site);
      full += d.tokens;
      sent += d.sent_tokens;
      if (rates !== null && d.action !== "kept") {
        const cached = lastBp !== undefined && site.position < lastBp.position;
        savedUsd += usd(d.tokens - d.sent_tokens, cached ? rates.cache_read : rates.input);
      }
    }
    // Attachments are counted at their estimated native cost, not as the chars of their base64.
    const media = this.media.tally();
    const otherTokens = Math.round(
      Math.max(0, other - media.outside_chars) / REQUEST_CHARS_PER_TOKEN,
    );
    savedUsd += media.saved_usd;
    return {
      count,
      before: otherTokens + full + media.native,
      after: otherTokens + sent + media.sent,
      saved_usd: Math.round(savedUsd * 1e9) / 1e9,
    };
  }

  report(
    format: Format,
    decisions: Decision[],
    fresh: number,
    recallTool: CompactReport["recall_tool"],
    log: TurnLog,
  ): CompactReport {
    return {
      format,
      enabled: true,
      offload: this.offload,
      model: this.analysis.model,
      priced_as: this.price?.id ?? null,
      turn: this.analysis.assistant_turns,
      results: decisions.length,
      kept: decisions.filter((d) => d.action === "kept").length,
      compacted: decisions.filter((d) => d.action === "compacted").length,
      offloaded: decisions.filter((d) => d.action === "offloaded").length,
      new_decisions: fresh,
      tokens_before: log.tokens_before,
      tokens_after: log.tokens_after,
      saved_tokens: log.tokens_before - log.tokens_after,
      saved_usd: log.saved_usd,
      recall_tool: recallTool,
      shadow: false,
      anchor: this.anchor,
      attachments: this.media.report(),
      errors: this.errors,
    };
  }
}

function recallToolTokens(format: Format, mode: OffloadConfig["tool_result_recall_mode"]): number {
  return estimateTokens(JSON.stringify(recallToolDefinition(format, mode)).length, "json");
}

function toDecision(site: ToolResultSite, record: ResultRecord, sticky: boolean): Decision {
  return {
    tool_use_id: site.tool_use_id,
    tool_name: record.tool_name,
    path: site.path,
    tier: record.tier,
    action: record.action,
    mem_id: record.mem_id,
    chars: record.chars,
    tokens: record.tokens,
    sent_tokens: record.action === "kept" ? record.tokens : record.rendered_tokens,
    sticky,
    reason: record.reason,
    ...(record.gate === null ? {} : { gate: record.gate }),
  };
}

function sameDecision(a: ResultRecord, b: ResultRecord): boolean {
  return a.action === b.action && a.rendered === b.rendered;
}

function parseArgs(raw: string, input: JsonNode | undefined): RecallArgs {
  if (input?.kind !== "object") return {};
  const out: Record<string, unknown> = {};
  for (const key of ["mem_id", "query", "json_path", "offset", "max_chars", "window"]) {
    const node = getMember(input, key);
    if (node?.kind === "string") out[key] = decodeString(raw, node);
    else if (node?.kind === "number") out[key] = Number(raw.slice(node.start, node.end));
  }
  return out as RecallArgs;
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message.slice(0, 200) : "unknown error";
}
