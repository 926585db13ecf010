/**
 * The `x-offload-summary` response header of a compact call: one line of JSON (ASCII only, so any HTTP stack
 * carries it) with the turn's counts, token estimates, the estimated saving and what went wrong, e.g. a
 * ledger write that failed (the result then stayed full). One shape on every route and every path: a member
 * that does not apply is null, never absent, so a client reads the same keys whatever happened.
 */

import type { OcrStatus } from "../core/attachments/types.ts";
import { FIELD_LIMITS } from "../core/formats/shape.ts";
import type { ExtractionProblem, Problem } from "../core/problems.ts";
import { type CompactReport, emptyReport } from "../core/turn/report.ts";
import type { ToolRuleCount } from "../core/turn/tool-rules.ts";
import type { Format } from "../core/types.ts";

/** Enough to say what failed without letting one bad turn blow past header size limits. */
const MAX_ERRORS = 8;
/**
 * The whole header, in chars. Node's fetch (undici, under the official SDKs) refuses a response
 * whose headers pass 16 KB; a few KB leaves room for the provider's own. Each echoed field is
 * bounded below, and lists are shortened (their totals stay) should the header still be longer.
 */
export const MAX_SUMMARY_HEADER_CHARS = 4096;
const MAX_MESSAGE_CHARS = 200;

/** A string from the request or a store, cut to `max` chars (whatever a caller sent). */
function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The report's fields the header repeats as they are (tokens_after and saved_* are adjusted for shadow mode). */
type ReportFields = Pick<
  CompactReport,
  | "enabled"
  | "offload"
  | "format"
  | "model"
  | "priced_as"
  | "turn"
  | "results"
  | "kept"
  | "compacted"
  | "offloaded"
  | "new_decisions"
  | "tokens_before"
  | "tokens_after"
  | "saved_tokens"
  | "saved_usd"
  | "recall_tool"
>;

export interface Summary extends ReportFields {
  changed: boolean;
  /** Compact route: the turn log line this call wrote (to post the provider's usage against); else null. */
  seq: number | null;
  /** Shadow mode: the request went out unchanged; what offload would have saved is in would_save_*. */
  shadow: boolean;
  would_save_tokens: number;
  would_save_usd: number;
  /** The attachment policy's effect (null when it is "native"); its tokens and dollars are in the totals above. */
  attachments: AttachmentSummary | null;
  /** What each tool rule matched this turn (at most 8, in the rules' order); empty without rules. */
  tool_rules: ToolRuleCount[];
  /**
   * One sentence for a person, when the call changed nothing it could have: shadow mode ("shadow: would save
   * $X; one line to go live: …") or compaction off. Null otherwise.
   */
  note: string | null;
  errors: Problem[];
  errors_total: number;
  /** Proxy routes and the in-process integrations (docs/proxy.md); null on the compact route. */
  proxy: ProxySummary | null;
}

/** The proxy's part of a summary. On an event stream the hop fields are null when headers go out. */
export interface ProxySummary {
  stream: boolean;
  /** Remembered recall calls spliced into this request. */
  spliced: number;
  hops: number | null;
  recalls: number | null;
  /** "failed": a recall hop failed or was refused, or the provider's stream was cut; the client got the error. */
  ending: "done" | "mixed" | "exhausted" | "failed" | null;
  memos: number | null;
  /** Billed dollars of the call (the provider's usage × the price table), and of its hops. */
  usd: number | null;
  hop_usd: number | null;
}

/** The proxy's part before the provider has answered (or when its answer is not watched). */
export function proxyPart(stream: boolean, spliced: number): ProxySummary {
  return {
    stream,
    spliced,
    hops: null,
    recalls: null,
    ending: null,
    memos: null,
    usd: null,
    hop_usd: null,
  };
}

export interface AttachmentSummary {
  policy: string;
  blocks: number;
  replaced: number;
  native: number;
  failed: number;
  extracted: number;
  native_tokens: number;
  sent_tokens: number;
  saved_tokens: number;
  saved_usd: number;
  /** Why blocks stayed native after a failed extraction (at most 8), each with its `path`. */
  failures: ExtractionProblem[];
  /**
   * With `attachment_ocr` on: images read by OCR this turn, those decided without its text, and why
   * for each of these (at most 8, with their `path`); null with it off.
   */
  ocr: { read: number; not_read: number; notes: OcrNote[] } | null;
}

/** Why OCR did not put an image's text in its placeholder this turn. */
export type OcrNote = OcrStatus & { path: string };

function attachmentSummary(report: CompactReport["attachments"]): AttachmentSummary | null {
  if (report === null) return null;
  const { items, estimate: _estimate, new_decisions: _n, ocr, ...counts } = report;
  const failures = items.flatMap((d) =>
    d.error === undefined ? [] : [boundedProblem({ ...d.error, path: d.path })],
  );
  const notes = items.flatMap((d) =>
    d.ocr === undefined || d.ocr.outcome === "read"
      ? []
      : [
          {
            path: clip(d.path, MAX_MESSAGE_CHARS),
            ...d.ocr,
            reason: clip(d.ocr.reason, MAX_MESSAGE_CHARS),
          },
        ],
  );
  return {
    ...counts,
    failures: failures.slice(0, MAX_ERRORS),
    ocr:
      ocr === undefined
        ? null
        : { read: ocr.read ?? 0, not_read: ocr.not_read ?? 0, notes: notes.slice(0, MAX_ERRORS) },
  };
}

/** The bound of each member a problem may carry besides its message. */
const PROBLEM_FIELD_CHARS: Record<string, number> = {
  tool_use_id: FIELD_LIMITS.id,
  mem_id: FIELD_LIMITS.id,
  path: MAX_MESSAGE_CHARS,
  reason: 100,
};

/** A problem as the header carries it: its message, ids, path and reason cut to their bounds. */
function boundedProblem<P extends Problem>(problem: P): P {
  const out: Record<string, unknown> = {
    ...problem,
    message: clip(problem.message, MAX_MESSAGE_CHARS),
  };
  for (const [key, max] of Object.entries(PROBLEM_FIELD_CHARS)) {
    const v = out[key];
    if (typeof v === "string") out[key] = clip(v, max);
  }
  return out as P;
}

export function summaryOf(
  report: CompactReport,
  changed: boolean,
  notes: readonly Problem[],
): Summary {
  const all = [...report.errors.map((e) => ({ ...e })), ...notes.map((n) => ({ ...n }))];
  // In shadow the returned request is the one sent: nothing was saved, and the decided saving is a "would".
  const shadow = report.shadow;
  return {
    enabled: report.enabled,
    offload: report.offload,
    changed,
    format: report.format,
    model: report.model === null ? null : clip(report.model, FIELD_LIMITS.model),
    priced_as: report.priced_as === null ? null : clip(report.priced_as, FIELD_LIMITS.model),
    turn: report.turn,
    results: report.results,
    kept: report.kept,
    compacted: report.compacted,
    offloaded: report.offloaded,
    new_decisions: report.new_decisions,
    tokens_before: report.tokens_before,
    tokens_after: shadow ? report.tokens_before : report.tokens_after,
    saved_tokens: shadow ? 0 : report.saved_tokens,
    saved_usd: shadow ? 0 : report.saved_usd,
    shadow,
    would_save_tokens: shadow ? report.saved_tokens : 0,
    would_save_usd: shadow ? report.saved_usd : 0,
    recall_tool: report.recall_tool,
    ...(report.anthropic_beta === undefined ? {} : { anthropic_beta: report.anthropic_beta }),
    attachments: attachmentSummary(report.attachments),
    tool_rules: (report.tool_rules ?? []).slice(0, MAX_ERRORS).map((r) => ({
      ...r,
      tool: clip(r.tool, MAX_RULE_CHARS),
      says: clip(r.says, MAX_MESSAGE_CHARS),
    })),
    note: noteOf(report),
    errors: all.slice(0, MAX_ERRORS).map(boundedProblem),
    errors_total: all.length,
    seq: null,
    proxy: null,
  };
}

/** The longest rule pattern the header repeats. */
const MAX_RULE_CHARS = 64;

/** The one line to go live, where a session's config, the deployment's or a request's header sets it. */
export const GO_LIVE = '{"tool_result_offload_shadow":false}';

/** What a person should know of a call that changed nothing it could have (Summary.note). */
function noteOf(report: CompactReport): string | null {
  if (!report.enabled)
    return "off: tool_result_compaction_enabled is false for this session, the request passed through unread";
  if (!report.shadow) return null;
  const usd = report.saved_usd.toFixed(4);
  return `shadow: would save $${usd} on this call (${report.saved_tokens} tokens); one line to go live: ${GO_LIVE} in the session's config, the deployment's or x-offload-config`;
}

/** Everything off: the request went through untouched and unread. */
export function passThroughSummary(format: Format): Summary {
  return summaryOf(emptyReport(format, false, false), false, []);
}

function ascii(summary: Summary): string {
  return JSON.stringify(summary).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The header value: one line of ASCII JSON, at most MAX_SUMMARY_HEADER_CHARS. Over it, the lists
 * are shortened from their ends (`errors_total` and the attachment counts still say how many there
 * were).
 */
export function summaryHeader(summary: Summary): string {
  let s = summary;
  let text = ascii(s);
  while (text.length > MAX_SUMMARY_HEADER_CHARS) {
    const failures = s.attachments?.failures ?? [];
    const notes = s.attachments?.ocr?.notes ?? [];
    const rules = s.tool_rules;
    // The longest list first, so every kind of trouble keeps a few examples.
    const longest = Math.max(s.errors.length, failures.length, notes.length, rules.length);
    if (longest === 0) break; // every field left is bounded on its own: this cannot stay over the cap
    if (s.errors.length === longest) s = { ...s, errors: s.errors.slice(0, -1) };
    else if (s.attachments !== null && failures.length === longest)
      s = { ...s, attachments: { ...s.attachments, failures: failures.slice(0, -1) } };
    else if (s.attachments?.ocr != null && notes.length === longest)
      s = {
        ...s,
        attachments: { ...s.attachments, ocr: { ...s.attachments.ocr, notes: notes.slice(0, -1) } },
      };
    else s = { ...s, tool_rules: rules.slice(0, -1) };
    text = ascii(s);
  }
  return text;
}
