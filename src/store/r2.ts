/**
 * The ledger on R2: one object per body at `bodies/<tenant>/<session>/<mem_id>`, the body's
 * metadata in the object's custom metadata (so a recall is one read, and `head` needs no body).
 *
 * R2 stores bytes; a JS string becomes UTF-8 on the way in. A body with a lone surrogate (legal in
 * JSON via `\ud800`, not in UTF-8) would come back altered, so such a body is stored as its JSON
 * string literal and flagged, and reads back exactly.
 */
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { ledgerKey, ledgerPrefix } from "./keys.ts";
import type { BodyLedgerPort } from "./ports.ts";

/** R2 allows 8,192 bytes of metadata per object; the outline is the only unbounded-ish field. */
const META_BUDGET = 6000;

export class R2Ledger implements BodyLedgerPort {
  readonly #bucket: R2Bucket;
  readonly #now: () => number;

  constructor(bucket: R2Bucket, options: { now?: () => number } = {}) {
    this.#bucket = bucket;
    this.#now = options.now ?? Date.now;
  }

  async put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    const wellFormed = isWellFormed(body);
    await this.#bucket.put(ledgerKey(ref, meta.mem_id), wellFormed ? body : JSON.stringify(body), {
      httpMetadata: { contentType: wellFormed ? "text/plain; charset=utf-8" : "application/json" },
      customMetadata: {
        meta: fitMeta(meta),
        encoding: wellFormed ? "text" : "json-string",
        // Readable copies for operators browsing the bucket.
        tool_name: meta.tool_name.slice(0, 200),
        chars: String(meta.chars),
        tokens: String(meta.tokens),
        kind: meta.kind,
        created: new Date(this.#now()).toISOString(),
      },
    });
  }

  async get(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const object = await this.#bucket.get(ledgerKey(ref, memId));
    if (object === null) return null;
    const text = await object.text();
    const custom = object.customMetadata ?? {};
    return {
      body: custom.encoding === "json-string" ? (JSON.parse(text) as string) : text,
      meta: readMeta(custom, memId),
    };
  }

  async head(ref: SessionRef, memId: string): Promise<BodyMeta | null> {
    const object = await this.#bucket.head(ledgerKey(ref, memId));
    return object === null ? null : readMeta(object.customMetadata ?? {}, memId);
  }

  async list(ref: SessionRef, limit = Infinity): Promise<string[]> {
    const prefix = ledgerPrefix(ref);
    const ids: string[] = [];
    let cursor: string | undefined;
    // R2 listings are strongly consistent: this sees every body the session has stored.
    while (ids.length < limit) {
      const page = await this.#bucket.list({
        prefix,
        limit: Math.min(1000, limit - ids.length),
        ...(cursor === undefined ? {} : { cursor }),
      });
      ids.push(...page.objects.map((o) => o.key.slice(prefix.length)));
      if (!page.truncated) break;
      cursor = page.cursor;
    }
    return ids;
  }

  async delete(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    // One call deletes up to 1,000 keys.
    for (let i = 0; i < memIds.length; i += 1000)
      await this.#bucket.delete(memIds.slice(i, i + 1000).map((id) => ledgerKey(ref, id)));
  }
}

function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function fitMeta(meta: BodyMeta): string {
  const json = JSON.stringify(meta);
  if (new TextEncoder().encode(json).length <= META_BUDGET) return json;
  return JSON.stringify({
    ...meta,
    tool_name: meta.tool_name.slice(0, 256),
    outline: meta.outline.slice(0, 1000),
  });
}

function readMeta(custom: Record<string, string>, memId: string): BodyMeta {
  if (custom.meta !== undefined) return JSON.parse(custom.meta) as BodyMeta;
  // An object written by other means still reads, with what its readable fields tell.
  return {
    mem_id: memId,
    tool_use_id: "",
    tool_name: custom.tool_name ?? "",
    chars: Number(custom.chars ?? 0),
    tokens: Number(custom.tokens ?? 0),
    kind: "text",
    outline: "",
    turn: 0,
  };
}
