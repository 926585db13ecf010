/**
 * An Anthropic `tool_result` block as the transform sees it: its text pieces (what is measured and
 * offloaded), and its media blocks and attachment replacements, collected for the attachment policy.
 */
import { formatPath } from "../../errors.ts";
import { attachmentIdIn } from "../attachments/text.ts";
import { getMember, type JsonNode, type JsonObject, type JsonString } from "../json/scan.ts";
import { mediaSite } from "./anthropic-media.ts";
import { expectObject, type Path, shapeError, stringMember } from "./shape.ts";
import type { MediaSite, ReplacedMediaSite, ToolResultSite } from "./types.ts";

/** The `tool_use` a result answers: its name and input (empty for a call only the server holds). */
export interface Call {
  name: string;
  input: JsonNode | undefined;
}

/** Where a result's media blocks and replacements go, and what places them in the prompt. */
export interface ResultCollector {
  media: MediaSite[];
  replaced: ReplacedMediaSite[];
  /** Assistant turns before the result. */
  turn: number;
  /** What turns a raw offset in `messages` into a prompt-order one. */
  base: number;
}

export function resultSite(
  raw: string,
  block: JsonObject,
  path: Path,
  index: number,
  id: string,
  call: Call,
  messageIndex: number,
  settled: boolean,
  position: number,
  collect: ResultCollector,
): ToolResultSite {
  const content = getMember(block, "content");
  const texts: JsonString[] = [];
  let hasMedia = false;
  // Media blocks and attachment replacements are counted together: a replacement takes its block's place.
  let ordinal = 0;
  if (content !== undefined) {
    if (content.kind === "string") texts.push(content);
    else if (content.kind === "array") {
      content.items.forEach((item, i) => {
        const ipath: Path = [...path, "content", i];
        const obj = expectObject(item, ipath, "a tool_result content block");
        const type = stringMember(raw, obj, "type", ipath, true);
        if (type === "text") {
          const text = getMember(obj, "text");
          if (text?.kind !== "string")
            shapeError('a text block needs a string "text"', [...ipath, "text"]);
          const replacedId = attachmentIdIn(raw, text);
          if (replacedId === null) texts.push(text);
          else {
            // An attachment's replacement from an earlier turn: media, not the tool's text (only text is measured).
            hasMedia = true;
            collect.replaced.push({
              id: replacedId,
              path: formatPath(ipath),
              position: collect.base + item.start,
              start: item.start,
              end: item.end,
              result: index,
            });
            ordinal++;
          }
        } else {
          hasMedia = true; // image, document, search_result…: kept in place, never measured
          if (type === "image" || type === "document") {
            const place = {
              message_index: messageIndex,
              turn: collect.turn,
              settled,
              position: collect.base + item.start,
              result: index,
            };
            collect.media.push(
              mediaSite(raw, obj, type, formatPath(ipath), `r${id}.${ordinal}`, place),
            );
          }
          ordinal++;
        }
      });
    } else if (content.kind !== "null")
      shapeError('tool_result "content" must be a string or an array of blocks', [
        ...path,
        "content",
      ]);
  }
  return {
    index,
    tool_use_id: id,
    tool_name: call.name,
    tool_input: call.input,
    message_index: messageIndex,
    path: formatPath(path),
    settled,
    content: content?.kind === "null" ? undefined : content,
    texts,
    has_media: hasMedia,
    position,
  };
}
