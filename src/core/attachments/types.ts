/** What the attachment policy decides and reports about document and image blocks. */
import type { OffloadConfig } from "../../config.ts";
import type { MediaSite } from "../formats/types.ts";
import type { ExtractionProblem } from "../problems.ts";
import type { ResultRecord } from "../types.ts";

/**
 * Replacements longer than this live in the ledger, not in the session's records (heavy bodies
 * never go to the DO).
 */
export const INLINE_REPLACEMENT_CHARS = 4000;

export interface AttachmentDecision {
  /** The block's id (`att_…`), or null for a block without bytes (URL or file sources). */
  id: string | null;
  path: string;
  kind: "document" | "image";
  /**
   * "native": sent as it is; "text": replaced by its extracted text; "placeholder": an image's
   * placeholder.
   */
  action: "native" | "text" | "placeholder";
  /** Replayed from an earlier turn's record. */
  sticky: boolean;
  /** The turn the block arrived on. */
  turn: number;
  format: string | null;
  bytes: number | null;
  /** Estimated tokens of the block sent natively (null: not estimated, e.g. a PDF not yet read). */
  native_tokens: number | null;
  /** Estimated tokens as sent in the returned request. */
  sent_tokens: number | null;
  saved_tokens: number;
  saved_usd: number;
  /** This turn's extraction came from the tenant's cache (nothing was parsed). */
  cached?: boolean;
  reason: string;
  /** Why extraction failed, when it did (the block then stays native). */
  error?: ExtractionProblem;
}

export interface AttachmentReport {
  policy: OffloadConfig["attachment_policy"];
  blocks: number;
  replaced: number;
  native: number;
  /** Blocks left native because their extraction failed. */
  failed: number;
  new_decisions: number;
  /** Files parsed this turn (not from the cache, not replayed). */
  extracted: number;
  native_tokens: number;
  sent_tokens: number;
  saved_tokens: number;
  saved_usd: number;
  /** How native tokens are estimated. */
  estimate: string;
  items: AttachmentDecision[];
}

export interface AttachmentTally {
  /** Raw chars of the counted blocks outside tool results (otherwise counted as request text). */
  outside_chars: number;
  native: number;
  sent: number;
  saved_usd: number;
}

/** A block's decision this turn and, when it is replaced, its replacement text. */
export interface MediaOutcome {
  decision: AttachmentDecision;
  rendered?: string;
}

/**
 * One block of this turn: where it is, its id, what became of it, and the record it decided (to
 * commit).
 */
export interface MediaEntry {
  site: MediaSite;
  id: string | null;
  outcome?: MediaOutcome;
  fresh?: ResultRecord;
}
