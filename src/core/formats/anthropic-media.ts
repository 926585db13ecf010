/**
 * Anthropic document and image blocks as the attachment policy sees them, and the text blocks that replaced
 * one on an earlier turn.
 */
import { attachmentIdIn } from "../attachments/text.ts";
import { getMember, type JsonObject, type JsonString } from "../json/scan.ts";
import { MEDIA_FIELD_LIMITS, shortString } from "./shape.ts";
import type { MediaSite } from "./types.ts";

/** A text block that replaced an attachment (its marker names the record): not the tool's own text. */
export function isReplacement(raw: string, block: JsonObject): boolean {
  const text = getMember(block, "text");
  return text?.kind === "string" && attachmentIdIn(raw, text) !== null;
}

export interface MediaPlace {
  message_index: number;
  turn: number;
  settled: boolean;
  position: number;
  result?: number;
}

/** A document/image block as the attachment policy sees it. Never throws: a malformed block is left alone. */
export function mediaSite(
  raw: string,
  block: JsonObject,
  kind: "document" | "image",
  path: string,
  locator: string,
  place: MediaPlace,
): MediaSite {
  const source = getMember(block, "source");
  let sourceType = "invalid";
  let mediaType: string | undefined;
  let data: JsonString | undefined;
  if (source?.kind === "object") {
    sourceType = shortString(raw, source, "type", MEDIA_FIELD_LIMITS.source_type) ?? "invalid";
    mediaType = shortString(raw, source, "media_type", MEDIA_FIELD_LIMITS.media_type);
    const d = getMember(source, "data");
    if (d?.kind === "string") data = d;
  }
  const title = shortString(raw, block, "title", MEDIA_FIELD_LIMITS.title);
  const citations = getMember(block, "citations");
  const enabled = citations?.kind === "object" ? getMember(citations, "enabled") : undefined;
  const cc = getMember(block, "cache_control");
  return {
    kind,
    path,
    locator,
    ...place,
    start: block.start,
    end: block.end,
    source_type: sourceType,
    ...(mediaType === undefined ? {} : { media_type: mediaType }),
    ...(data === undefined ? {} : { data }),
    ...(title === undefined ? {} : { title }),
    citations: enabled?.kind === "true",
    ...(cc === undefined || cc.kind === "null"
      ? {}
      : { cache_control: raw.slice(cc.start, cc.end) }),
  };
}
