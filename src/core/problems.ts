/**
 * Non-fatal problems: what a call could not do while it still succeeded (a ledger write that
 * failed, so a result stayed full; an attachment that could not be read, so it went natively). One
 * union on `code`, as zod's issues are, carried by the core's report, the store's notes, the
 * summary header and the attachment decisions, so a client reads one shape whatever went wrong.
 * Fatal errors are OffloadErrors (src/errors.ts).
 */
import type { ExtractionFailure } from "./ports.ts";

/** A backend could not be read or written; what depended on it was left as sent. */
export interface StorageProblem {
  code: "storage_error";
  message: string;
  /** The result (or attachment id) that stayed as sent, when one did. */
  tool_use_id?: string;
}

/** A tool_use_id decided on an earlier turn came back with a different body: kept as sent. */
export interface ConflictProblem {
  code: "conflict";
  message: string;
  tool_use_id: string;
}

/**
 * The store's lookup index could not be written: the body is safe, lookups fall back to the ledger.
 */
export interface IndexProblem {
  code: "index_error";
  message: string;
  mem_id?: string;
}

/**
 * The tenant's learning statistics could not be read or written: only the gate's learning is
 * slowed.
 */
export interface StatsProblem {
  code: "stats_error";
  message: string;
}

/** An attachment could not be extracted: it is sent natively. */
export interface ExtractionProblem {
  code: ExtractionFailure["type"];
  message: string;
  /** extraction_failed: corrupt, encrypted, empty or too_large. */
  reason?: string;
  /**
   * Where the attachment is in the request (set where a list of them needs it, e.g. the summary
   * header).
   */
  path?: string;
}

/**
 * The request's shape could not be read ("invalid_request": it went out exactly as it came, the
 * provider judges it), or one part of it could not be placed ("unplaced": a result answering no
 * call in sight, a role or TTL this version does not know), left as it is while the rest was
 * compacted.
 */
export interface ShapeProblem {
  code: "invalid_request" | "unplaced";
  message: string;
  /** Where in the request, e.g. `messages[3].content[1]`. */
  path?: string;
}

/**
 * Offload or the cache anchor is on, but the model has no price: neither can act. The message names
 * the model and the config key that prices it (`tool_result_pricing_model`).
 */
export interface UnpricedModelProblem {
  code: "unpriced_model";
  message: string;
}

export type Problem =
  | StorageProblem
  | UnpricedModelProblem
  | ShapeProblem
  | ConflictProblem
  | IndexProblem
  | StatsProblem
  | ExtractionProblem;

/**
 * An extraction failure as a problem (`type` becomes `code`; records of older versions stored it
 * so).
 */
export function extractionProblem(
  failure:
    | ExtractionFailure
    | ExtractionProblem
    | { type: string; message: string; reason?: string },
): ExtractionProblem {
  const code = "code" in failure ? failure.code : (failure.type as ExtractionProblem["code"]);
  return {
    code,
    message: failure.message,
    ...(failure.reason === undefined ? {} : { reason: failure.reason }),
  };
}

/**
 * The first words of what a backend threw, for a problem's message (never a stack, at most 200
 * chars).
 */
export function describeCause(cause: unknown): string {
  return cause instanceof Error ? cause.message.slice(0, 200) : "unknown error";
}
