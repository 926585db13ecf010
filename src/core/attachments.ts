/**
 * The attachment policy of the turn transform (config `attachment_policy`). Document and image blocks — in
 * user messages, and inside tool results, whose media blocks invariant 10 hands to this policy — are sent
 * natively ("native", the default: this module then does nothing at all), or replaced:
 * - "extract": a document by its extracted text from the turn it arrives on;
 * - "extract_after_first": a document natively on the turn it arrives on, by its text once settled;
 * - both: an image stays native while hot (`attachment_image_hot_turns`), then becomes a short deterministic
 *   placeholder (format, pixel size, bytes, the turn it came in, and the OCR text when OCR is plugged in).
 *
 * Replacements are sticky like stubs. Every block gets an id from its place and its bytes (`att_` + a keyed
 * digest, see MediaSite.locator), and its decision is a record in the session's store under that id, next to
 * the tool results' records: the same block renders the same bytes every later turn, whether the client sends
 * the full history or the one we returned (whose replacement text names the id), and compacting a compacted
 * request changes nothing. A replacement is rendered only once its decision is saved and, when its text is
 * long, once that text is durably in the ledger (heavy texts never go into the session's records).
 *
 * A failed extraction leaves the block native for good (a sticky "kept" record, the reason in the report),
 * unless the failure may pass (a missing dependency): then nothing is recorded and a later turn tries again.
 * A document whose text would be cut by the limits stays native too: replacing it would drop content.
 *
 * Extraction is asynchronous and CPU-heavy; it runs at most once per file and tenant: the store's extraction
 * cache (src/extract/cache.ts) holds its outcome by content hash, and a decided block is never extracted
 * again. All I/O goes through the store port.
 */
import type { OffloadConfig } from "../config.ts";
import {
  type CachedExtractOutput,
  type ExtractionCache,
  type Extractor,
  extractCached,
} from "../extract/cache.ts";
import { imageInfo } from "../extract/image.ts";
import { base64DecodedLength, decodeBase64 } from "../extract/input.ts";
import type { OcrOptions } from "../extract/ocr.ts";
import type { Attachment } from "../extract/types.ts";
import type { OffloadStore } from "../store/port.ts";
import {
  documentTokens,
  imageTokens,
  NATIVE_ESTIMATE,
  renderDocumentText,
  renderImagePlaceholder,
} from "./attachment-text.ts";
import type {
  Edit,
  FormatAdapter,
  MediaSite,
  ReplacedMediaSite,
  RequestAnalysis,
} from "./formats/types.ts";
import { decodeString } from "./json/scan.ts";
import { bodyDigest, memIdOf } from "./memid.ts";
import { type ModelPrice, ratesFor, usd } from "./pricing.ts";
import { plural } from "./text.ts";
import { detectKind, estimateTokens, REQUEST_CHARS_PER_TOKEN } from "./tokens.ts";
import type { AttachmentInfo, ResultRecord, SessionRef } from "./types.ts";

export interface AttachmentOptions {
  /** OCR for image placeholders: off unless an engine and a model source are plugged in (src/extract/ocr.ts). */
  ocr?: OcrOptions | undefined;
  /** The extractor: extractText unless a test or an embedder plugs in another. */
  extract?: Extractor | undefined;
}

export interface AttachmentDecision {
  /** The block's id (`att_…`), or null for a block without bytes (URL or file sources). */
  id: string | null;
  path: string;
  kind: "document" | "image";
  /** "native": sent as it is; "text": replaced by its extracted text; "placeholder": an image's placeholder. */
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
  error?: { type: string; reason?: string; message: string };
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
  /** Raw chars of the counted blocks outside tool results (the transform counts them as request text otherwise). */
  outside_chars: number;
  native: number;
  sent: number;
  saved_usd: number;
}

export interface AttachmentContext {
  raw: string;
  analysis: RequestAnalysis;
  adapter: FormatAdapter;
  config: OffloadConfig;
  ref: SessionRef;
  store: OffloadStore;
  secret: string;
  price: ModelPrice | null;
  options: AttachmentOptions;
  /** Where storage failures are reported (the turn's errors). */
  errors: {
    push(error: { type: "storage_error"; message: string; tool_use_id?: string }): unknown;
  };
}

/** Replacements longer than this live in the ledger, not in the session's records (heavy bodies never go to the DO). */
export const INLINE_REPLACEMENT_CHARS = 4000;

interface Outcome {
  decision: AttachmentDecision;
  /** The replacement text, when the block is replaced this turn. */
  rendered?: string;
}

interface Entry {
  site: MediaSite;
  id: string | null;
  outcome?: Outcome;
  /** The record this turn decided (to commit). */
  fresh?: ResultRecord;
}

/** One turn's attachment work, in the steps the transform calls: identify → decide → settle → render. */
export class AttachmentTurn {
  readonly active: boolean;
  readonly #ctx: AttachmentContext;
  readonly #entries: Entry[] = [];
  readonly #replaced: { site: ReplacedMediaSite; decision?: AttachmentDecision }[] = [];
  readonly #edits = new Map<Edit, MediaSite>();
  #extracted = 0;

  constructor(ctx: AttachmentContext) {
    this.#ctx = ctx;
    const { analysis } = ctx;
    this.active =
      ctx.config.attachment_policy !== "native" &&
      ctx.adapter.renderMedia !== undefined &&
      ((analysis.media?.length ?? 0) > 0 || (analysis.replaced_media?.length ?? 0) > 0);
  }

  /** The ids whose records the turn must load. Hashes each block's bytes once (keyed and scoped, like mem_ids). */
  async identify(): Promise<string[]> {
    if (!this.active) return [];
    const { raw, secret, ref } = this.#ctx;
    for (const site of this.#ctx.analysis.media ?? []) {
      const hasBytes =
        site.data !== undefined && (site.source_type === "base64" || site.source_type === "text");
      const id = hasBytes
        ? `att_${(await bodyDigest(secret, ref.tenant, ref.session, `${site.locator}\u0000${raw.slice(site.data!.start, site.data!.end)}`)).slice(0, 24)}`
        : null;
      this.#entries.push({ site, id });
    }
    for (const site of this.#ctx.analysis.replaced_media ?? []) this.#replaced.push({ site });
    return [
      ...new Set([
        ...this.#entries.flatMap((e) => (e.id === null ? [] : [e.id])),
        ...this.#replaced.map((r) => r.site.id),
      ]),
    ];
  }

  /** Replay what is recorded, decide the rest (extracting where a decision needs the text), one block at a time. */
  async decide(records: ReadonlyMap<string, ResultRecord>): Promise<void> {
    if (!this.active) return;
    for (const e of this.#entries) {
      const record = e.id === null ? undefined : records.get(e.id);
      e.outcome = record === undefined ? await this.#first(e) : await this.#replay(e.site, record);
    }
    for (const r of this.#replaced) {
      const record = records.get(r.site.id);
      // A marker without a record (a pasted text, a deleted session) is only text: not counted, not touched.
      if (record?.attachment !== undefined && record.action === "compacted")
        r.decision = this.#decision(
          r.site.path,
          r.site.position,
          record.attachment,
          r.site.id,
          true,
          record.reason,
          record.rendered_tokens,
        );
    }
  }

  /** Records decided this turn, for the turn's commit. */
  records(): ResultRecord[] {
    return this.#entries.flatMap((e) => (e.fresh === undefined ? [] : [e.fresh]));
  }

  /** First writer wins: where a concurrent turn decided a block first, render its decision instead. */
  async settle(standing: ReadonlyMap<string, ResultRecord>): Promise<void> {
    for (const e of this.#entries) {
      if (e.fresh === undefined) continue;
      const s = standing.get(e.fresh.tool_use_id);
      if (
        s !== undefined &&
        (s.action !== e.fresh.action ||
          s.rendered !== e.fresh.rendered ||
          s.mem_id !== e.fresh.mem_id)
      )
        e.outcome = await this.#replay(e.site, s);
    }
  }

  /** The commit failed: decisions of this turn are not sticky, so their blocks go out natively. */
  unsaved(): void {
    for (const e of this.#entries) {
      if (e.fresh === undefined) continue;
      e.outcome = this.#native(
        e.site,
        e.id,
        "sent natively: the decision could not be saved",
        e.outcome?.decision.native_tokens ?? null,
      );
      e.fresh = undefined;
    }
  }

  /** Replacement blocks inside tool result `result`, by block start (for a tool result rendered anew). */
  overridesIn(result: number): Map<number, string> | undefined {
    let out: Map<number, string> | undefined;
    for (const e of this.#entries) {
      if (e.site.result !== result || e.outcome?.rendered === undefined) continue;
      (out ??= new Map()).set(
        e.site.start,
        this.#ctx.adapter.renderMedia!(this.#ctx.raw, e.site, e.outcome.rendered),
      );
    }
    return out;
  }

  /** Edits for replaced blocks, except inside tool results that `rewritten` says are rendered anew (overridesIn). */
  edits(rewritten: (result: number) => boolean): Edit[] {
    const out: Edit[] = [];
    for (const e of this.#entries) {
      if (
        e.outcome?.rendered === undefined ||
        (e.site.result !== undefined && rewritten(e.site.result))
      )
        continue;
      const edit = {
        start: e.site.start,
        end: e.site.end,
        text: this.#ctx.adapter.renderMedia!(this.#ctx.raw, e.site, e.outcome.rendered),
      };
      this.#edits.set(edit, e.site);
      out.push(edit);
    }
    return out;
  }

  /**
   * An insertion (the cache anchor's marker) that falls inside a replaced block is moved into the replacement;
   * true when it was absorbed (the caller must not add it). A block that carries its own breakpoint keeps it.
   */
  absorb(insertion: Edit): boolean {
    for (const [edit, site] of this.#edits) {
      if (insertion.start <= edit.start || insertion.start >= edit.end) continue;
      if (
        insertion.start === edit.end - 1 &&
        insertion.end === insertion.start &&
        site.cache_control === undefined &&
        edit.text.endsWith("}")
      ) {
        edit.text = `${edit.text.slice(0, -1)}${insertion.text}}`;
      }
      return true;
    }
    return false;
  }

  tally(): AttachmentTally {
    const t: AttachmentTally = { outside_chars: 0, native: 0, sent: 0, saved_usd: 0 };
    const add = (d: AttachmentDecision | undefined, outside: number) => {
      if (d === undefined || d.native_tokens === null) return;
      t.outside_chars += outside;
      t.native += d.native_tokens;
      t.sent += d.action === "native" ? d.native_tokens : (d.sent_tokens ?? d.native_tokens);
      t.saved_usd += d.saved_usd;
    };
    for (const e of this.#entries)
      add(e.outcome?.decision, e.site.result === undefined ? e.site.end - e.site.start : 0);
    for (const r of this.#replaced)
      add(r.decision, r.site.result === undefined ? r.site.end - r.site.start : 0);
    return t;
  }

  report(): AttachmentReport | null {
    if (!this.active) return null;
    const items = [
      ...this.#entries.flatMap((e) => (e.outcome === undefined ? [] : [e.outcome.decision])),
      ...this.#replaced.flatMap((r) => (r.decision === undefined ? [] : [r.decision])),
    ];
    const t = this.tally();
    return {
      policy: this.#ctx.config.attachment_policy,
      blocks: items.length,
      replaced: items.filter((d) => d.action !== "native").length,
      native: items.filter((d) => d.action === "native").length,
      failed: items.filter((d) => d.error !== undefined).length,
      new_decisions: this.records().length,
      extracted: this.#extracted,
      native_tokens: t.native,
      sent_tokens: t.sent,
      saved_tokens: t.native - t.sent,
      saved_usd: Math.round(t.saved_usd * 1e9) / 1e9,
      estimate: NATIVE_ESTIMATE,
      items,
    };
  }

  // ---- decisions ----

  /** Dollars per token where the block sits: cache read before the last breakpoint, input after. */
  #rate(position: number): number {
    const { price, analysis } = this.#ctx;
    if (price === null) return 0;
    const rates = ratesFor(price, analysis.prompt_chars / REQUEST_CHARS_PER_TOKEN);
    const last = analysis.breakpoints[analysis.breakpoints.length - 1];
    return last !== undefined && position < last.position ? rates.cache_read : rates.input;
  }

  #decision(
    path: string,
    position: number,
    info: AttachmentInfo,
    id: string,
    sticky: boolean,
    reason: string,
    sentTokens: number | null,
    replaced = true,
    cached?: boolean,
  ): AttachmentDecision {
    const native = info.native_tokens;
    const sent = replaced ? sentTokens : native;
    const saved = replaced && native !== null && sent !== null ? native - sent : 0;
    return {
      id,
      path,
      kind: info.kind,
      action: replaced ? (info.kind === "image" ? "placeholder" : "text") : "native",
      sticky,
      turn: info.arrived,
      format: info.format,
      bytes: info.bytes,
      native_tokens: native,
      sent_tokens: sent,
      saved_tokens: saved,
      saved_usd: saved === 0 ? 0 : usd(saved, this.#rate(position)),
      ...(cached === undefined ? {} : { cached }),
      reason,
      ...(info.failed === undefined ? {} : { error: info.failed }),
    };
  }

  /** Native this turn, nothing recorded: a later turn decides again. */
  #native(
    site: MediaSite,
    id: string | null,
    reason: string,
    nativeTokens: number | null,
    error?: AttachmentDecision["error"],
  ): Outcome {
    return {
      decision: {
        id,
        path: site.path,
        kind: site.kind,
        action: "native",
        sticky: false,
        turn: site.turn,
        format: site.media_type ?? null,
        bytes: site.data === undefined ? null : this.#bytesOf(site),
        native_tokens: nativeTokens,
        sent_tokens: nativeTokens,
        saved_tokens: 0,
        saved_usd: 0,
        reason,
        ...(error === undefined ? {} : { error }),
      },
    };
  }

  #bytesOf(site: MediaSite): number {
    if (site.source_type === "text") return site.data!.end - site.data!.start - 2; // close enough for a report
    return site.data!.escaped
      ? base64DecodedLength(decodeString(this.#ctx.raw, site.data!))
      : base64DecodedLength(this.#ctx.raw.slice(site.data!.start + 1, site.data!.end - 1));
  }

  /** A sticky decision to leave the block native. */
  #keep(e: Entry, info: AttachmentInfo, reason: string, cached?: boolean): Outcome {
    const record = this.#record(e, info, "kept", reason, null, null, info.native_tokens ?? 0);
    e.fresh = record;
    return {
      decision: this.#decision(
        e.site.path,
        e.site.position,
        info,
        e.id!,
        false,
        reason,
        null,
        false,
        cached,
      ),
    };
  }

  #record(
    e: Entry,
    info: AttachmentInfo,
    action: "kept" | "compacted",
    reason: string,
    rendered: string | null,
    memId: string | null,
    sentTokens: number,
  ): ResultRecord {
    return {
      tool_use_id: e.id!,
      tool_name: `attachment:${e.site.kind}`,
      tier: "attachment",
      action,
      mem_id: memId,
      chars: rendered?.length ?? 0,
      tokens: info.native_tokens ?? 0,
      kind: "text",
      raw_chars: e.site.end - e.site.start,
      fingerprint: "",
      rendered,
      rendered_tokens: sentTokens,
      turn: this.#ctx.analysis.assistant_turns,
      reason,
      gate: null,
      attachment: info,
    };
  }

  async #replay(site: MediaSite, record: ResultRecord): Promise<Outcome> {
    const info = record.attachment;
    const id = record.tool_use_id;
    if (info === undefined)
      return this.#native(
        site,
        id,
        "sent natively: its record is not an attachment decision",
        null,
      );
    if (record.action !== "compacted")
      return {
        decision: this.#decision(
          site.path,
          site.position,
          info,
          id,
          true,
          record.reason,
          null,
          false,
        ),
      };
    let rendered = record.rendered;
    if (rendered === null && record.mem_id !== null) {
      try {
        rendered = (await this.#ctx.store.getBody(this.#ctx.ref, record.mem_id))?.body ?? null;
      } catch (cause) {
        this.#ctx.errors.push({
          type: "storage_error",
          tool_use_id: id,
          message: `attachment text unreadable, sent natively this turn (${describe(cause)})`,
        });
        return this.#native(
          site,
          id,
          "sent natively this turn: its text could not be read from the ledger",
          info.native_tokens,
        );
      }
    }
    if (rendered === null)
      return this.#native(
        site,
        id,
        "sent natively: its text is missing from the ledger",
        info.native_tokens,
      );
    return {
      decision: this.#decision(
        site.path,
        site.position,
        info,
        id,
        true,
        record.reason,
        record.rendered_tokens,
      ),
      rendered,
    };
  }

  async #first(e: Entry): Promise<Outcome> {
    const { site } = e;
    const { config, analysis } = this.#ctx;
    if (e.id === null)
      return this.#native(
        site,
        null,
        `a ${site.source_type} source carries no bytes here: sent as it is`,
        site.kind === "image" ? imageTokens(undefined, undefined) : null,
      );
    if (site.kind === "document") {
      if (site.citations)
        return this.#native(
          site,
          e.id,
          "citations are enabled: it stays a document so the model can cite it",
          null,
        );
      if (config.attachment_policy === "extract_after_first" && !site.settled) {
        return this.#native(
          site,
          e.id,
          "extract_after_first: sent natively on the turn it arrives, as its text from the next",
          null,
        );
      }
      return this.#document(e);
    }
    if (site.source_type !== "base64")
      return this.#native(
        site,
        e.id,
        `an image with a ${site.source_type} source: sent as it is`,
        imageTokens(undefined, undefined),
      );
    const hot = config.attachment_image_hot_turns;
    if (analysis.assistant_turns - site.turn < hot) {
      const head = this.#imageHead(site);
      return this.#native(
        site,
        e.id,
        `hot: an image stays native for ${plural(hot, "turn")} from the one it arrives on`,
        imageTokens(head?.width, head?.height),
      );
    }
    return this.#image(e);
  }

  #cache(): ExtractionCache | undefined {
    const store = this.#ctx.store;
    if (store.getExtraction === undefined || store.putExtraction === undefined) return undefined;
    return {
      getExtraction: (t, k) => store.getExtraction!(t, k),
      putExtraction: (t, k, v) => store.putExtraction!(t, k, v),
    };
  }

  async #extract(
    attachment: Attachment,
    options: Parameters<typeof extractCached>[0]["options"],
  ): Promise<CachedExtractOutput> {
    const out = await extractCached({
      attachment,
      options,
      tenant: this.#ctx.ref.tenant,
      cache: this.#cache(),
      extract: this.#ctx.options.extract,
    });
    if (!out.cached) this.#extracted++;
    return out;
  }

  async #document(e: Entry): Promise<Outcome> {
    const { site } = e;
    const { config, raw } = this.#ctx;
    const data = decodeString(raw, site.data!);
    const attachment: Attachment =
      site.source_type === "text"
        ? { type: "text", media_type: site.media_type, data, filename: site.title }
        : { type: "base64", media_type: site.media_type ?? "", data, filename: site.title };
    const out = await this.#extract(attachment, {
      max_pages: config.attachment_max_pages,
      max_chars: config.attachment_max_chars,
    });
    const base = {
      kind: "document" as const,
      format: out.format === "unknown" ? (site.media_type ?? "unknown") : out.format,
      bytes: out.bytes,
      arrived: site.turn,
    };
    if (!out.outcome.ok) {
      const err = out.outcome.error;
      const failed = {
        type: err.type,
        ...(err.reason === undefined ? {} : { reason: err.reason }),
        message: err.message,
      };
      const why = `extraction failed (${err.type}${err.reason === undefined ? "" : `: ${err.reason}`}): ${err.message}; sent natively`;
      // A missing part may be configured later: no sticky decision, a later turn tries again.
      if (err.type === "extraction_dependency_missing")
        return this.#native(site, e.id, `${why}, tried again next turn`, null, failed);
      return this.#keep(e, { ...base, native_tokens: null, failed }, why, out.cached);
    }
    const r = out.outcome.result;
    const kind = detectKind(r.text);
    const textTokens = estimateTokens(r.text.length, kind);
    const info: AttachmentInfo = {
      ...base,
      format: r.format,
      ...(r.pages === undefined ? {} : { pages: r.pages }),
      native_tokens: documentTokens(r.format, r.pages, r.pages_extracted, textTokens),
    };
    if (r.truncated) {
      const limit =
        r.truncated_by === "max_pages"
          ? `attachment_max_pages (${config.attachment_max_pages} of ${r.pages} pages)`
          : `${r.truncated_by ?? "a limit"}`;
      return this.#keep(
        e,
        info,
        `longer than ${limit}: sent natively so nothing is dropped`,
        out.cached,
      );
    }
    const rendered = renderDocumentText({
      id: e.id!,
      title: site.title,
      format: r.format,
      pages: r.pages,
      bytes: out.bytes,
      turn: site.turn,
      text: r.text,
    });
    const sent = estimateTokens(rendered.length, kind);
    // The provider reads PDFs and plain text natively; any other document it cannot read, so its text is always better.
    const readable =
      r.format === "pdf" || site.source_type === "text" || site.media_type === "text/plain";
    if (readable && sent >= info.native_tokens!)
      return this.#keep(
        e,
        info,
        `no saving: its text (~${sent} tokens) costs as much as the document (~${info.native_tokens})`,
        out.cached,
      );
    return this.#replace(
      e,
      info,
      rendered,
      sent,
      `${config.attachment_policy}: replaced by its extracted text`,
      out.cached,
    );
  }

  /** The image's header (format, size) from the first bytes only: what a hot image's report needs. */
  #imageHead(site: MediaSite): { width?: number; height?: number } | null {
    const data = site.data!;
    const prefix = data.escaped
      ? decodeString(this.#ctx.raw, data).slice(0, 65536)
      : this.#ctx.raw.slice(data.start + 1, Math.min(data.end - 1, data.start + 1 + 65536));
    try {
      return imageInfo(decodeBase64(prefix.slice(0, prefix.length - (prefix.length % 4))));
    } catch {
      return null;
    }
  }

  /**
   * Whether an image's OCR text pays for itself: over the horizon (expected remaining turns) the placeholder
   * with the text must cost less than the image re-sent each turn, at the rate where the block sits. Asked
   * before OCR with no text yet (can any text pay? never for an unknown model, whose tokens cannot be
   * priced), and after it with the text read. OCR itself runs lazily: only on the turn the image leaves its
   * hot turns (a screenshot used once is never read), and once per file and tenant (the extraction cache).
   */
  #ocrGate(
    position: number,
    nativeTokens: number,
    placeholder: Parameters<typeof renderImagePlaceholder>[0],
  ): { fire: boolean; why: string } {
    const { price, config } = this.#ctx;
    if (price === null) return { fire: false, why: "the model's prices are unknown" };
    const horizon = config.tool_result_offload_horizon_default;
    const text = estimateTokens(renderImagePlaceholder(placeholder).length);
    const rate = this.#rate(position);
    const saving = usd(horizon * (nativeTokens - text), rate);
    const why = `over ${horizon} turns the image costs ~$${usd(horizon * nativeTokens, rate)}, its placeholder${placeholder.ocr_text === undefined ? "" : " with the text"} ~$${usd(horizon * text, rate)}`;
    return { fire: saving > 0, why };
  }

  async #image(e: Entry): Promise<Outcome> {
    const { site } = e;
    const { config, raw, options } = this.#ctx;
    let bytes: Uint8Array;
    try {
      bytes = decodeBase64(decodeString(raw, site.data!));
    } catch {
      const failed = {
        type: "extraction_failed",
        reason: "corrupt",
        message: "image data is not valid base64",
      };
      return this.#keep(
        e,
        {
          kind: "image",
          format: site.media_type ?? "image",
          bytes: 0,
          arrived: site.turn,
          native_tokens: imageTokens(undefined, undefined),
          failed,
        },
        "not valid base64: sent as it is",
      );
    }
    const head = imageInfo(bytes);
    const info: AttachmentInfo = {
      kind: "image",
      format: head?.format ?? site.media_type ?? "image",
      bytes: bytes.length,
      arrived: site.turn,
      ...(head?.width === undefined || head.height === undefined
        ? {}
        : { width: head.width, height: head.height }),
      native_tokens: imageTokens(head?.width, head?.height),
    };
    let ocrText: string | undefined;
    let note = "";
    let cached: boolean | undefined;
    const ocr = config.attachment_ocr ? options.ocr : undefined;
    const placeholderInput = {
      id: e.id!,
      format: info.format,
      width: info.width,
      height: info.height,
      bytes: info.bytes,
      turn: site.turn,
    };
    if (ocr?.enabled) {
      const gate = this.#ocrGate(site.position, info.native_tokens!, placeholderInput);
      if (!gate.fire) note = `; not read by OCR: ${gate.why}`;
      else {
        const out = await this.#extract({ data: bytes, media_type: site.media_type }, { ocr });
        cached = out.cached;
        if (out.outcome.ok) {
          const text = out.outcome.result.text;
          const paid = this.#ocrGate(site.position, info.native_tokens!, {
            ...placeholderInput,
            ocr_text: text,
          });
          if (paid.fire) ocrText = text;
          else note = `; its OCR text is left out: ${paid.why}`;
        } else {
          const err = out.outcome.error;
          const failed = {
            type: err.type,
            ...(err.reason === undefined ? {} : { reason: err.reason }),
            message: err.message,
          };
          if (err.type === "extraction_dependency_missing")
            return this.#native(
              site,
              e.id,
              `OCR unavailable (${err.message}): sent natively, tried again next turn`,
              info.native_tokens,
              failed,
            );
          note = `; OCR failed (${err.type}${err.reason === undefined ? "" : `: ${err.reason}`})`;
        }
      }
    }
    const rendered = renderImagePlaceholder({ ...placeholderInput, ocr_text: ocrText });
    const sent = estimateTokens(rendered.length);
    if (sent >= info.native_tokens!)
      return this.#keep(
        e,
        info,
        `no saving: the image (~${info.native_tokens} tokens) costs less than its placeholder (~${sent})`,
        cached,
      );
    const hot = config.attachment_image_hot_turns;
    return this.#replace(
      e,
      info,
      rendered,
      sent,
      `no longer hot (${plural(hot, "turn")}): replaced by a placeholder${ocrText === undefined ? "" : " with its OCR text"}${note}`,
      cached,
    );
  }

  /** Replace the block: a long text goes to the ledger first (invariant 5), then the decision is recorded. */
  async #replace(
    e: Entry,
    info: AttachmentInfo,
    rendered: string,
    sent: number,
    reason: string,
    cached?: boolean,
  ): Promise<Outcome> {
    const { store, ref, secret, analysis } = this.#ctx;
    let memId: string | null = null;
    if (rendered.length > INLINE_REPLACEMENT_CHARS) {
      memId = memIdOf(await bodyDigest(secret, ref.tenant, ref.session, rendered));
      try {
        await store.putBody(ref, rendered, {
          mem_id: memId,
          tool_use_id: e.id!,
          tool_name: `attachment:${e.site.kind}`,
          chars: rendered.length,
          tokens: sent,
          kind: "text",
          outline: "",
          turn: analysis.assistant_turns,
        });
      } catch (cause) {
        this.#ctx.errors.push({
          type: "storage_error",
          tool_use_id: e.id!,
          message: `attachment text not stored, sent natively (${describe(cause)})`,
        });
        return this.#native(
          e.site,
          e.id,
          "sent natively: its text could not be stored (tried again next turn)",
          info.native_tokens,
        );
      }
    }
    e.fresh = this.#record(
      e,
      info,
      "compacted",
      reason,
      memId === null ? rendered : null,
      memId,
      sent,
    );
    return {
      decision: this.#decision(
        e.site.path,
        e.site.position,
        info,
        e.id!,
        false,
        reason,
        sent,
        true,
        cached,
      ),
      rendered,
    };
  }
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message.slice(0, 200) : "unknown error";
}
