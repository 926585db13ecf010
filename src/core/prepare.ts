/**
 * Reading a request before its turn: the span tree and the format's analysis, once. A caller that
 * needs the request's ids before it can load the session (a service that reads the session's config
 * and records in one round trip) prepares the request, asks the store, then hands the prepared
 * request to `compact`, which does not parse it again.
 */
import { isOffloadError, type OffloadError } from "../errors.ts";
import type { FormatAdapter, RequestAnalysis } from "./formats/types.ts";
import { type JsonNode, parseJsonSpans } from "./json/scan.ts";
import { arrivalId, pressureId, settleId, warmId } from "./turn/context.ts";
import type { Format } from "./types.ts";

export interface PreparedRequest {
  readonly format: Format;
  readonly raw: string;
  readonly root: JsonNode;
  /** The format's reading, or why the shape could not be read (the request then passes through). */
  readonly analysis: RequestAnalysis | { invalid: OffloadError };
}

/**
 * Parses and analyses `raw` as a request of `format`. Invalid JSON throws (`invalid_json`); a valid
 * JSON value the adapter cannot read is kept as `analysis.invalid`.
 */
export function prepareRequest(
  format: Format,
  adapter: FormatAdapter,
  raw: string,
): PreparedRequest {
  const root = parseJsonSpans(raw);
  try {
    return { format, raw, root, analysis: adapter.analyze(raw, root) };
  } catch (e) {
    if (!isOffloadError(e) || e.type !== "invalid_request") throw e;
    return { format, raw, root, analysis: { invalid: e } };
  }
}

/** What a turn of this request will ask the store for: its results' ids and tool names. */
export function turnKeys(prepared: PreparedRequest): { ids: string[]; names: string[] } {
  const { analysis } = prepared;
  if ("invalid" in analysis) return { ids: [], names: [] };
  return {
    // With each result's context-pressure, kept-while-warm and breakpoint-move records (pressure.ts,
    // decide.ts, breakpoint.ts), and a fresh one's declined first delivery, asked for whether or not they
    // exist: the turn's load is then served from this one read.
    ids: analysis.sites.flatMap((s) => [
      s.tool_use_id,
      pressureId(s.tool_use_id),
      warmId(s.tool_use_id),
      settleId(s.tool_use_id),
      ...(s.settled ? [] : [arrivalId(s.tool_use_id)]),
    ]),
    names: [...new Set(analysis.sites.map((s) => s.tool_name))],
  };
}
