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

/**
 * What OCR did for an image decided this turn, when the config asks for it (`attachment_ocr`):
 * - read: its text is in the placeholder;
 * - hot: not yet: it is read when it leaves its hot turns;
 * - skipped: not worth reading (its placeholder alone already costs as much as the image, or the
 *   model has no price), or there are no bytes to read;
 * - dropped: read, but its text costs more than it saves: a placeholder without it;
 * - failed: the image could not be read (too large, corrupt, no text, doubtful), for good;
 * - unavailable: no OCR here (off on this deployment, no engine or no model): tried again next turn.
 */
export interface OcrStatus {
  outcome: "read" | "hot" | "skipped" | "dropped" | "failed" | "unavailable";
  /** The outcome came from the tenant's extraction cache: nothing was decoded this turn. */
  cached?: boolean;
  reason: string;
}

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
  /** An image decided this turn with `attachment_ocr` on: what OCR did, and why. */
  ocr?: OcrStatus;
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
  /**
   * With `attachment_ocr` on: images whose OCR text is in their placeholder this turn, and those
   * decided this turn without it (each decision's `ocr` says why).
   */
  ocr?: { read: number; not_read: number };
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
