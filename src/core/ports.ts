/**
 * The ports of the core: every interface the turn transform and recall need from the outside. The
 * core does all its I/O through these; adapters (src/store, src/session, src/extract) import them
 * and implement them, never the other way round (test/unit/dependencies.test.ts keeps the
 * direction).
 *
 * - `OffloadStore`: sticky decisions, the body ledger, the session's report. Adapters hold their
 *   binding (Maps, an R2 bucket, a Durable Object stub…) and pass the contract suite in
 *   test/contract.
 * - `ExtractionCache`: attachment extractions per tenant, keyed by content hash (optional on a
 *   store).
 * - `AttachmentExtractor`: turns an attachment into text; the core never loads an extraction engine
 *   itself.
 */

import type { Calibration } from "./calibration.ts";
import type { SessionLengths } from "./horizon.ts";
import type {
  BodyMeta,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnDecision,
  TurnLog,
} from "./types.ts";

/**
 * Offloads and recalls of one tool's results: what the adaptive gate learns its recall rate from.
 */
export interface ToolStats {
  offloaded: number;
  recalls: number;
}

export interface LoadedState {
  /** Records for the requested tool_use_ids that have one. */
  records: Map<string, ResultRecord>;
  /** Whether the recall tool has been declared in this session (sticky once true). */
  recall_declared: boolean;
  /**
   * Per tool name (of those asked for), across the tenant's sessions. Optional: not every store
   * learns.
   */
  tool_stats?: Record<string, ToolStats>;
  /** Per tool name, this session only. */
  session_tool_stats?: Record<string, ToolStats>;
  /**
   * The tenant's calibration per model, when the store holds a copy with the session (then the
   * turn reads no other store for it); absent: the turn asks `calibration`.
   */
  calibrations?: Record<string, Calibration>;
  /**
   * Typical seconds between this session's turns (median of recent gaps), null before two turns.
   */
  gap_seconds?: number | null;
  /**
   * Seconds since the session's last turn was committed (the store's clock), null before the
   * first: past the provider's cache TTL, rewriting earlier bytes costs nothing extra.
   */
  idle_seconds?: number | null;
  /**
   * Optional: the tenant's observed session lengths (horizon.ts), from which the gate learns how many
   * more calls a session that has run this long will make. Absent: the configured horizon (or the
   * adaptive gate's estimate). A store supplies what it knows of ended sessions; it is a cache of the
   * tenant's history, never read back to decide anything but the horizon.
   */
  session_lengths?: SessionLengths;
  /**
   * The store's hold on the session for this turn (opaque to the core): handed back with every
   * ledger write and the commit, so a store can refuse a turn that a delete overtook.
   */
  lease?: unknown;
}

export interface TurnCommit {
  records: readonly ResultRecord[];
  recall_declared: boolean;
  log: TurnLog;
  /** The lease the turn's load gave (`LoadedState.lease`). */
  lease?: unknown;
  /**
   * Every result's decision on this turn, for the session report's "last turn" (a store may keep
   * only the latest turn's, or none: nothing reads them back to decide).
   */
  decisions?: readonly TurnDecision[];
  /** How many results the turn decided, when `decisions` holds only the last of them. */
  decisions_total?: number;
}

export interface CommitResult {
  /**
   * The standing record for every committed tool_use_id (the earlier one where a record already
   * existed).
   */
  records: Map<string, ResultRecord>;
}

export interface SessionSummary {
  tenant: string;
  session: string;
  calls: number;
  recall_declared: boolean;
  recalls: number;
  /** Per tool name, this session. */
  tool_stats: Record<string, ToolStats>;
  records: ResultRecord[];
  turns: TurnLog[];
}

/**
 * What an extraction produced, as far as the core reads it (an extractor's result may carry more).
 * Cached per tenant, so it is plain JSON.
 */
export interface ExtractedText {
  text: string;
  /** The format the bytes were read as (pdf, docx, png…). */
  format: string;
  /** PDF: pages in the document, and pages read. */
  pages?: number;
  pages_extracted?: number;
  /** A limit cut the text short; `truncated_by` names it. */
  truncated: boolean;
  truncated_by?: string;
}

/** Why an attachment could not be extracted: the caller sends it natively instead. */
export interface ExtractionFailure {
  type: "unsupported_attachment" | "extraction_dependency_missing" | "extraction_failed";
  message: string;
  /** What the bytes were detected as. */
  format: string;
  /** extraction_failed: corrupt, encrypted, empty or too_large. */
  reason?: string;
  /** extraction_dependency_missing: the part that is absent (ocr_engine, ocr_model, pdf_engine). */
  dependency?: string;
}

export type CachedExtraction =
  | { ok: true; result: ExtractedText }
  | { ok: false; error: ExtractionFailure };

/**
 * Where cached extractions live, per tenant (the service: R2 under `extracts/<tenant>/`). Keys are
 * content hashes, not session-scoped: entries outlive sessions. Strongly consistent, like the
 * ledger.
 */
export interface ExtractionCache {
  getExtraction(tenant: string, key: string): Promise<CachedExtraction | null>;
  putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void>;
}

/**
 * The storage port. Guarantees an adapter gives:
 * - `putBody` resolves only once the body is durable (nothing is stubbed before its body is safe);
 * - `commit` is first-writer-wins per tool_use_id and returns the records that now stand, so two
 *   turns of one session racing each other render the same bytes; a record it does not return
 *   was not saved (the result is then kept full);
 * - everything is scoped by tenant and session: another scope's mem_id reads exactly like an
 *   unknown one;
 * - values come back as copies: a caller mutating what it got changes nothing stored;
 * - a shadow turn's offloads (`log.shadow`) do not count in the tenant's learning statistics: the
 *   model saw those results full, so it could not recall them, and counting them would teach live
 *   sessions that nobody recalls.
 */
export interface OffloadStore extends Partial<ExtractionCache> {
  /**
   * The sticky records of `toolUseIds`, the session flags, and (for the adaptive gate) the recall
   * statistics of `toolNames`. A commit's newly stored offloaded records count as offloads of their
   * tool; `noteRecall` counts a recall of the mem_id's tool.
   */
  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames?: readonly string[],
  ): Promise<LoadedState>;
  commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult>;
  /** `lease`: the turn's (`LoadedState.lease`), when the write belongs to a turn. */
  putBody(ref: SessionRef, body: string, meta: BodyMeta, lease?: unknown): Promise<void>;
  getBody(ref: SessionRef, memId: string): Promise<StoredBody | null>;
  /**
   * Whether the ledger holds this mem_id in this session, without reading the body (optional: the
   * core falls back to `getBody`).
   */
  hasBody?(ref: SessionRef, memId: string): Promise<boolean>;
  noteRecall(ref: SessionRef, memId: string): Promise<void>;
  describeSession(ref: SessionRef): Promise<SessionSummary | null>;
  /** Removes the session's state and bodies; deleting an unknown session is not an error. */
  deleteSession(ref: SessionRef): Promise<void>;
  /**
   * Optional: the tenant's calibration for a model (provider tokens per estimated token, learned
   * from measured usage), null before any. A store without it leaves the estimates uncalibrated; a
   * failure to read it is not the turn's failure (the estimates stay as they are).
   */
  calibration?(ref: SessionRef, model: string): Promise<Calibration | null>;
  // getExtraction / putExtraction (optional, from ExtractionCache): the tenant's extraction cache,
  // so a file is extracted once per tenant whatever the session. Not scoped by session and not
  // removed with one. A store without it makes the attachment policy extract again whenever a
  // decision needs the text.
}

/**
 * The bytes of an attachment as the core hands them over: a base64 or text source, or decoded
 * bytes.
 */
export type ExtractionInput =
  | { type: "base64"; media_type: string; data: string; filename?: string | undefined }
  | { type: "text"; media_type?: string | undefined; data: string; filename?: string | undefined }
  | { data: Uint8Array; media_type?: string | undefined };

export interface ExtractionRequest {
  attachment: ExtractionInput;
  /**
   * "document": read its text within the limits; "image": its OCR text (asked only when `ocr` is
   * on).
   */
  kind: "document" | "image";
  /** Documents: pages read, and the cap on the text. */
  max_pages?: number;
  max_chars?: number;
  tenant: string;
  /** The tenant's cache (from the store), or undefined: every call extracts. */
  cache: ExtractionCache | undefined;
}

export interface Extraction {
  outcome: CachedExtraction;
  /** The outcome came from the cache: nothing was parsed. */
  cached: boolean;
  /** The format the bytes were detected as ("unknown" when they could not be decoded). */
  format: string;
  /** Size of the decoded bytes (0 when they could not be decoded). */
  bytes: number;
}

/**
 * The attachment policy's extractor (config `attachment_policy`), given to `compact` in its input:
 * the library entry and the service wire the default one (src/extract/attachment-extractor.ts).
 * Without one, documents stay native and are tried again on a later turn.
 */
export interface AttachmentExtractor {
  /** Images get OCR text in their placeholder; off, the extractor is never asked about an image. */
  readonly ocr: boolean;
  /** Failures are outcomes (`ok: false`), never thrown; a thrown error is a bug of the caller. */
  extract(request: ExtractionRequest): Promise<Extraction>;
}
