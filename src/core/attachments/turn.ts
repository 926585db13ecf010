/**
 * The attachment policy of the turn (config `attachment_policy`). Document and image blocks — in
 * user messages, and inside tool results, whose media blocks are never measured as the result's
 * text — are sent natively ("native", the default: this module then does nothing at all), or
 * replaced:
 * - "extract": a document by its extracted text from the turn it arrives on;
 * - "extract_after_first": a document natively on the turn it arrives on, by its text once settled;
 * - both: an image stays native while hot (`attachment_image_hot_turns`), then becomes a short
 *   deterministic placeholder (format, pixel size, bytes, the turn it came in, and the OCR text
 *   when OCR is plugged in).
 *
 * Replacements are sticky like stubs. Every block gets an id from its place and its bytes (`att_` +
 * a keyed digest, see MediaSite.locator), and its decision is a record in the session's store under
 * that id, next to the tool results' records: the same block renders the same bytes every later
 * turn, whether the client sends the full history or the one we returned (whose replacement text
 * names the id), and compacting a compacted request changes nothing. A replacement is rendered only
 * once its decision is saved and, when its text is long, once that text is durably in the ledger
 * (heavy texts never go into the session's records).
 *
 * A failed extraction leaves the block native for good (a sticky "kept" record, the reason in the
 * report), unless the failure may pass (a missing dependency): then nothing is recorded and a later
 * turn tries again. A document whose text would be cut by the limits stays native too: replacing it
 * would drop content.
 *
 * Extraction is asynchronous and CPU-heavy; it runs at most once per file and tenant: the store's
 * extraction cache holds its outcome by content hash, and a decided block is never extracted again.
 */
import type { Edit, MediaSite, ReplacedMediaSite } from "../formats/types.ts";
import { bodyDigest } from "../memid.ts";
import type { TurnContext } from "../turn/context.ts";
import type { ResultRecord } from "../types.ts";
import { type ExtractionCount, firstDecision } from "./decide.ts";
import { decisionFrom, nativeOutcome, replayMedia } from "./record.ts";
import { NATIVE_ESTIMATE } from "./text.ts";
import type { AttachmentDecision, AttachmentReport, AttachmentTally, MediaEntry } from "./types.ts";

/** With OCR asked for: the images read by it this turn, and those decided without its text. */
function ocrCounts(items: AttachmentDecision[]): { ocr?: { read: number; not_read: number } } {
  const decided = items.filter((d) => d.ocr !== undefined);
  if (decided.length === 0) return {};
  const read = decided.filter((d) => d.ocr!.outcome === "read").length;
  return { ocr: { read, not_read: decided.length - read } };
}

/** One turn's attachment work, in the steps the turn calls: identify → decide → settle → render. */
export class AttachmentTurn {
  readonly active: boolean;
  readonly #ctx: TurnContext;
  readonly #entries: MediaEntry[] = [];
  readonly #replaced: { site: ReplacedMediaSite; decision?: AttachmentDecision }[] = [];
  readonly #edits = new Map<Edit, MediaSite>();
  readonly #count: ExtractionCount = { parsed: 0 };

  constructor(ctx: TurnContext) {
    this.#ctx = ctx;
    const { analysis } = ctx;
    this.active =
      ctx.config.attachment_policy !== "native" &&
      ctx.adapter.renderMedia !== undefined &&
      ((analysis.media?.length ?? 0) > 0 || (analysis.replaced_media?.length ?? 0) > 0);
  }

  /**
   * The ids whose records the turn must load. Hashes each block's bytes once (keyed and scoped,
   * like mem_ids).
   */
  async identify(): Promise<string[]> {
    if (!this.active) return [];
    const { raw, secret, ref } = this.#ctx;
    for (const site of this.#ctx.analysis.media ?? []) {
      const hasBytes =
        site.data !== undefined && (site.source_type === "base64" || site.source_type === "text");
      const bytes = hasBytes ? raw.slice(site.data!.start, site.data!.end) : "";
      const id = hasBytes
        ? `att_${(await bodyDigest(secret, ref.tenant, ref.session, `${site.locator}\u0000${bytes}`)).slice(0, 24)}`
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

  /**
   * Replay what is recorded, decide the rest (extracting where a decision needs the text), one at a
   * time.
   */
  async decide(records: ReadonlyMap<string, ResultRecord>): Promise<void> {
    if (!this.active) return;
    const ctx = this.#ctx;
    for (const e of this.#entries) {
      const record = e.id === null ? undefined : records.get(e.id);
      e.outcome =
        record === undefined
          ? await firstDecision(ctx, e, this.#count)
          : await replayMedia(ctx, e.site, record);
    }
    for (const r of this.#replaced) {
      const record = records.get(r.site.id);
      // A marker without a record (a pasted text, a deleted session) is only text: not counted, not
      // touched.
      if (record?.attachment !== undefined && record.action === "compacted")
        r.decision = decisionFrom(ctx, r.site, {
          info: record.attachment,
          id: r.site.id,
          sticky: true,
          reason: record.reason,
          sent: record.rendered_tokens,
        });
    }
  }

  /** Records decided this turn, for the turn's commit. */
  records(): ResultRecord[] {
    return this.#entries.flatMap((e) => (e.fresh === undefined ? [] : [e.fresh]));
  }

  /**
   * First writer wins: where a concurrent turn decided a block first, render its decision instead.
   */
  async settle(standing: ReadonlyMap<string, ResultRecord>): Promise<void> {
    for (const e of this.#entries) {
      if (e.fresh === undefined) continue;
      const s = standing.get(e.fresh.tool_use_id);
      // Not kept by the store: not saved, so not sticky.
      if (s === undefined) this.#native(e);
      else if (
        s.action !== e.fresh.action ||
        s.rendered !== e.fresh.rendered ||
        s.mem_id !== e.fresh.mem_id
      )
        e.outcome = await replayMedia(this.#ctx, e.site, s);
    }
  }

  /** The commit failed: decisions of this turn are not sticky, so their blocks go out natively. */
  unsaved(): void {
    for (const e of this.#entries) if (e.fresh !== undefined) this.#native(e);
  }

  #native(e: MediaEntry): void {
    e.outcome = nativeOutcome(
      this.#ctx,
      e.site,
      e.id,
      "sent natively: the decision could not be saved",
      e.outcome?.decision.native_tokens ?? null,
    );
    e.fresh = undefined;
  }

  /**
   * Replacement blocks inside tool result `result`, by block start (for a tool result rendered
   * anew).
   */
  overridesIn(result: number): Map<number, string> | undefined {
    let out: Map<number, string> | undefined;
    for (const e of this.#entries) {
      if (e.site.result !== result || e.outcome?.rendered === undefined) continue;
      (out ??= new Map()).set(e.site.start, this.#render(e.site, e.outcome.rendered));
    }
    return out;
  }

  /**
   * Edits for replaced blocks, except inside tool results `rewritten` says are rendered anew
   * (overridesIn); `register`: the edits are the turn's (an anchor may be absorbed into them),
   * else a preview.
   */
  edits(rewritten: (result: number) => boolean, register = true): Edit[] {
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
        text: this.#render(e.site, e.outcome.rendered),
      };
      if (register) this.#edits.set(edit, e.site);
      out.push(edit);
    }
    return out;
  }

  #render(site: MediaSite, text: string): string {
    return this.#ctx.adapter.renderMedia!(this.#ctx.raw, site, text);
  }

  /**
   * An insertion (the cache anchor's marker) that falls inside a replaced block is moved into the
   * replacement; true when it was absorbed (the caller must not add it). A block that carries its
   * own breakpoint keeps it.
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
      extracted: this.#count.parsed,
      ...ocrCounts(items),
      native_tokens: t.native,
      sent_tokens: t.sent,
      saved_tokens: t.native - t.sent,
      saved_usd: Math.round(t.saved_usd * 1e9) / 1e9,
      estimate: NATIVE_ESTIMATE,
      items,
    };
  }
}
