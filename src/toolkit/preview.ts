/**
 * `previewOf`: the size line, structural index and bounded head preview an offload stub shows, for a tool
 * author to return beside a page. It is the stub's own rendering (`renderShape` in core/stub.ts), fed the same
 * way `compact` feeds it, so the two cannot drift apart.
 */
import { DEFAULT_CONFIG } from "../config.ts";
import { structureOf } from "../core/structure.ts";
import { renderShape } from "../core/stub.ts";
import { detectKind, estimateTokens } from "../core/tokens.ts";
import { OffloadError } from "../errors.ts";
import { pageNumber } from "./paginate.ts";

export interface PreviewOptions {
  /** Length of the head preview in chars (default: the stub's, `tool_result_stub_preview_chars`, 400). */
  max_chars?: number;
  /** Prefixes the size line with "Output of <tool_name>: ", as in a stub. */
  tool_name?: string;
}

/**
 * The text a tool sends for a value: a string as it is, anything else as compact JSON. JSON.stringify is
 * deterministic (key order is the object's own: integer keys ascending, then insertion order), and keeping
 * that order rather than sorting keys means the preview describes the very text the tool returns. BigInts,
 * which JSON cannot hold, become their decimal strings (what database drivers do for int8).
 */
export function serializeValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
  } catch (cause) {
    throw new OffloadError(
      "invalid_argument",
      `value cannot be serialized as JSON (${cause instanceof Error ? cause.message : String(cause)})`,
      { path: "value", cause },
    );
  }
  // A function or symbol at the top level serializes to nothing.
  if (text === undefined)
    throw new OffloadError("invalid_argument", `a ${typeof value} cannot be serialized as JSON`, {
      path: "value",
    });
  return text;
}

/**
 * At most `max_chars` of head, an outline of at most 600 chars and an index of at most 1,200 (the stub's
 * bounds), the end of a log or text (300), and a few short lines. The
 * cost is linear in the value (it is serialized and, for JSON, parsed once): preview the result, not a page.
 */
export function previewOf(value: unknown, options: PreviewOptions = {}): string {
  const previewChars = pageNumber(
    options.max_chars ?? DEFAULT_CONFIG.tool_result_stub_preview_chars,
    "max_chars",
  );
  const text = serializeValue(value);
  const kind = detectKind(text);
  return renderShape({
    tool_name: options.tool_name ?? "",
    chars: text.length,
    tokens: estimateTokens(text.length, kind),
    structure: structureOf(text, kind),
    body: text,
    preview_chars: previewChars,
    extended: true,
  }).join("\n");
}
