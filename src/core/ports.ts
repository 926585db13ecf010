/**
 * The ports of the core: every interface the turn transform and recall need from the outside. The
 * core does all its I/O through these; adapters (src/store, src/extract) import them and implement
 * them, never the other way round (test/unit/dependencies.test.ts keeps the direction).
 *
 * - `OffloadStore`: where sessions live. A turn is explicit: `beginTurn` answers everything the
 *   turn needs to start in one round trip and hands back a `Turn`, through which the turn stores
 *   bodies, commits its decisions and finishes; nothing of a turn lives on the store. Recall needs
 *   only `getBody` and `noteRecall`.
 * - `ExtractionCache`: attachment extractions per tenant, keyed by content hash.
 * - `AttachmentExtractor`: turns an attachment into text; the core never loads an extraction engine
 *   itself.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "./billing.ts";
import type { Calibration } from "./calibration.ts";
import type { SessionLengths } from "./horizon.ts";
import type { Problem } from "./problems.ts";
import type {
  BodyMeta,
  ProxyMemo,
  ProxyTurnNote,
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

/** What a turn asks its session for when it begins. */
export interface TurnAsk {
  /**
   * The ids whose records the turn needs (tool_use_ids with their `#pressure` and `#warm` ids);
   * ids found later (attachment ids) are read with `Turn.read`. [] asks for the start alone.
   */
  ids: readonly string[];
  /** The tool names of the request (their learning statistics, for the adaptive gate). */
  names: readonly string[];
  /** Proxy: ids the request carries that a memo may be anchored on (only those memos come back). */
  anchors?: readonly string[];
}

/** Everything a turn starts from, read in one round trip: the one shape of turn-start data. */
export interface TurnStart {
  /** The session's own config layer (what `PUT …/config` stored), `{}` when none. */
  config: OffloadConfigPatch;
  /** The records of the asked ids that exist. */
  records: ReadonlyMap<string, ResultRecord>;
  /** Whether the recall tool has been declared in this session (sticky once true). */
  recall_declared: boolean;
  /** The proxy's memos anchored on the asked anchors, oldest first. */
  memos: readonly ProxyMemo[];
  /** Per asked tool name: the tenant's statistics (as last cached; `{}` before any). */
  tool_stats: Readonly<Record<string, ToolStats>>;
  /** Per asked tool name: this session's own. */
  session_tool_stats: Readonly<Record<string, ToolStats>>;
  /**
   * Provider tokens per estimated token, per price-table model: the session's own calibration once
   * it is ready, else the tenant's (as last cached).
   */
  calibrations: Readonly<Record<string, Calibration>>;
  /** Typical seconds between this session's turns (median of recent gaps), null before two. */
  gap_seconds: number | null;
  /**
   * Seconds since the session's last turn was logged (the store's clock), null before the first:
   * past the provider's cache TTL, rewriting earlier bytes costs nothing extra.
   */
  idle_seconds: number | null;
  /**
   * The tenant's ended sessions' lengths (horizon.ts, as last cached), from which the gate learns how
   * many more calls a session that has run this long will make. Absent: the configured horizon (or
   * the adaptive gate's estimate), as before the tenant has ended a session.
   */
  session_lengths?: SessionLengths;
}

/** A turn's decisions, committed once it has taken them. */
export interface TurnCommit {
  /** New records (first decisions); a record that already exists for its id is not replaced. */
  records: readonly ResultRecord[];
  recall_declared: boolean;
  log: TurnLog;
  /**
   * Every result's decision on this turn, for the session report's "last turn" (a store may keep
   * only the latest ones: nothing reads them back to decide).
   */
  decisions?: readonly TurnDecision[];
}

export interface CommitResult {
  /**
   * The standing record for every committed tool_use_id (the earlier one where a record already
   * existed: first writer wins). A record it does not return was not saved.
   */
  records: ReadonlyMap<string, ResultRecord>;
}

/** What a turn adds once its answer is known (all optional: a compact turn adds nothing). */
export interface TurnFinish {
  /** The proxy's hops and recalls (noted on the turn's log line). */
  proxy?: ProxyTurnNote;
  /** What the provider billed for the call, when the answers said (kept on the turn's line). */
  usage?: TurnUsage;
  /** The proxy's memos (kept before the next request may need them). */
  memos?: readonly ProxyMemo[];
  /** The provider's counts of results stubbed on arrival (kept on the line's estimate). */
  counted?: Readonly<Record<string, number>>;
}

/**
 * One turn of one session, from `beginTurn` to `finish`. Guarantees an adapter gives:
 * - `putBody` resolves only once the body is durable (nothing is stubbed before its body is safe),
 *   and refuses a write after the turn's lease has run out;
 * - `commit` is first-writer-wins per tool_use_id and returns the records that now stand, so two
 *   turns of one session racing each other render the same bytes; a commit after the session was
 *   deleted (since the turn began) fails and writes nothing;
 * - the turn's log line and the usage `finish` brings are written in one transaction, with a seq
 *   that is never issued twice in the session; a steady turn's line (nothing new to save) may wait
 *   for `finish`, so its answer never waits for it;
 * - values come back as copies.
 */
export interface Turn extends TurnStart {
  /** Records of ids the begin did not ask for (attachment ids, a request read after it). */
  read(ids: readonly string[]): Promise<ReadonlyMap<string, ResultRecord>>;
  putBody(body: string, meta: BodyMeta): Promise<void>;
  getBody(memId: string): Promise<StoredBody | null>;
  /** Whether the ledger holds this mem_id in the turn's session, without reading the body. */
  hasBody(memId: string): Promise<boolean>;
  commit(commit: TurnCommit): Promise<CommitResult>;
  /**
   * The turn is over: its line (if the commit left it to here), the proxy's note, the usage and
   * the memos are written. At most once; a turn that never committed writes only the memos.
   */
  finish(finish?: TurnFinish): Promise<void>;
  /** The turn's log line, once written (the usage route names it), else null. */
  readonly seq: number | null;
  /** Non-fatal problems of the turn's storage (an index or statistics write), for its summary. */
  readonly notes: readonly Problem[];
  /** The tenant's extraction cache, where the store keeps one. */
  readonly extractions?: ExtractionCache | undefined;
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
  /** OCR: how it read, when a user should know (an image over the pixel limit read at half resolution). */
  ocr_note?: string;
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

/** What recall needs of a store: a session's bodies, and the count of a recall. */
export interface RecallStore {
  getBody(ref: SessionRef, memId: string): Promise<StoredBody | null>;
  /** Counts a successful recall (a recall of an offloaded result teaches the adaptive gate). */
  noteRecall(ref: SessionRef, memId: string): Promise<void>;
  /**
   * Why a body is not there when the store knows (a bounded store dropped its session): the model's
   * answer names the cause rather than calling the mem_id unknown. Null when it does not know.
   */
  whyMissing?(ref: SessionRef, memId: string): Promise<string | null>;
}

/**
 * The storage port. Everything is scoped by tenant and session: another scope's mem_id reads
 * exactly like an unknown one. A shadow turn's offloads (`log.shadow`) do not count in the tenant's
 * learning statistics: the model saw those results full, so it could not recall them.
 */
export interface OffloadStore extends RecallStore, Partial<ExtractionCache> {
  /**
   * A turn begins: the session's config layer, the records of `ask.ids`, the memos anchored on
   * `ask.anchors`, the statistics and calibrations, and a lease on the session (a turn that a
   * delete overtakes cannot commit), in one round trip. Fails (a `storage_error`) when the session
   * cannot be read, or is being deleted.
   */
  beginTurn(ref: SessionRef, ask: TurnAsk): Promise<Turn>;
  hasBody?(ref: SessionRef, memId: string): Promise<boolean>;
  describeSession(ref: SessionRef): Promise<SessionSummary | null>;
  /** Removes the session's state and bodies; deleting an unknown session is not an error. */
  deleteSession(ref: SessionRef): Promise<void>;
  // getExtraction / putExtraction (optional, from ExtractionCache): the tenant's extraction cache,
  // so a file is extracted once per tenant whatever the session. Not scoped by session and not
  // removed with one.
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
