/**
 * A request in prompt order, unit by unit, each hashed as a provider's prompt cache keys it: the
 * sketch of a turn (sketch.ts) is made of these. A unit is a tool definition, a system block (or
 * the instructions), a message, or on Anthropic a message's content block (the positions its
 * 20-block lookback counts). The hash leaves out the cache markers (`cache_control`,
 * `prompt_cache_breakpoint`, the AI SDK's `providerOptions`): a client that moves its breakpoint
 * forward every turn still sends the same prefix, and the provider still reads it.
 *
 * Hashing costs one pass over the request's text (two 32-bit lanes, FNV-style), the same order as
 * the scan that read it.
 */
import { getMember, type JsonNode } from "./json/scan.ts";
import type { Format } from "./types.ts";

export interface PromptUnit {
  /** The node hashed (member by member, markers left out). */
  node: JsonNode;
  /** Prompt-order offset of the unit's end (the adapters' `position`s). */
  position: number;
  section: "tools" | "system" | "messages";
  /** Index of the message it belongs to (-1 outside messages). */
  message: number;
  /** The message's role, hashed with its first unit. */
  role?: string;
  /**
   * A string that stands for one text block (Anthropic's `content` or `system` shorthand): hashed
   * as that block, so the two spellings key the same prefix.
   */
  text?: boolean;
}

/** Members that mark a cache breakpoint: moving one does not change the prefix it caches. */
const MARKERS = new Set(["cache_control", "prompt_cache_breakpoint", "providerOptions"]);

const SECTIONS: Record<Format, [key: string, section: PromptUnit["section"]][]> = {
  anthropic: [
    ["tools", "tools"],
    ["system", "system"],
    ["messages", "messages"],
  ],
  "openai-chat": [
    ["tools", "tools"],
    ["messages", "messages"],
  ],
  "openai-responses": [
    ["tools", "tools"],
    ["instructions", "system"],
    ["input", "messages"],
  ],
  "ai-sdk": [
    ["tools", "tools"],
    ["prompt", "messages"],
  ],
};

function roleOf(raw: string, node: JsonNode): string | undefined {
  if (node.kind !== "object") return undefined;
  const role = getMember(node, "role") ?? getMember(node, "type");
  return role?.kind === "string" ? raw.slice(role.start + 1, role.end - 1) : undefined;
}

/**
 * The request's units in prompt order (the sections as the adapters order them; a section the
 * request lacks or holds in a shape they would refuse is skipped: the adapter has judged the shape
 * already).
 */
export function promptUnits(format: Format, raw: string, root: JsonNode): PromptUnit[] {
  const units: PromptUnit[] = [];
  if (root.kind !== "object") return units;
  let base = 0;
  for (const [key, section] of SECTIONS[format]) {
    const node = getMember(root, key);
    if (node === undefined || node.kind === "null") continue;
    const at = (n: JsonNode) => base + n.end - node.start;
    const text = format === "anthropic" ? { text: true } : {};
    if (node.kind === "string")
      units.push({ node, position: at(node), section, message: -1, ...text });
    else if (node.kind === "array")
      node.items.forEach((item, m) => {
        if (section !== "messages") {
          units.push({ node: item, position: at(item), section, message: -1 });
          return;
        }
        const role = roleOf(raw, item);
        const content = item.kind === "object" ? getMember(item, "content") : undefined;
        // Anthropic's lookback counts content blocks: a message is one unit per block there.
        if (format === "anthropic" && content?.kind === "array" && content.items.length > 0)
          content.items.forEach((block, b) => {
            units.push({
              node: block,
              position: at(block),
              section,
              message: m,
              ...(b === 0 && role !== undefined ? { role } : {}),
            });
          });
        else if (format === "anthropic" && content?.kind === "string")
          units.push({
            node: content,
            position: at(item),
            section,
            message: m,
            text: true,
            ...(role === undefined ? {} : { role }),
          });
        else
          units.push({
            node: item,
            position: at(item),
            section,
            message: m,
            ...(role === undefined ? {} : { role }),
          });
      });
    base += node.end - node.start;
  }
  return units;
}

/** A replacement of raw text (the turn's edits). */
export interface TextEdit {
  start: number;
  end: number;
  text: string;
}

/**
 * Two 32-bit multiplicative lanes (FNV-style, different primes) over two characters a step; 41 bits
 * of them name a prefix. A stream: the same characters hash the same however they were cut into
 * `feed` calls.
 */
export class Hash {
  a = 0x811c9dc5;
  b = 0x9e3779b9;
  /** A character waiting for its pair (-1: none). */
  #odd = -1;

  #step(w: number): void {
    this.a = Math.imul(this.a ^ w, 0x01000193);
    this.b = Math.imul(this.b ^ w, 0x5bd1e995) ^ (this.b >>> 15);
  }

  feed(s: string, from = 0, to = s.length): void {
    let i = from;
    if (this.#odd >= 0 && i < to) {
      this.#step(this.#odd | (s.charCodeAt(i++) << 16));
      this.#odd = -1;
    }
    let a = this.a;
    let b = this.b;
    for (; i + 1 < to; i += 2) {
      const w = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
      a = Math.imul(a ^ w, 0x01000193);
      b = Math.imul(b ^ w, 0x5bd1e995) ^ (b >>> 15);
    }
    this.a = a;
    this.b = b;
    if (i < to) this.#odd = s.charCodeAt(i);
  }

  #flush(): void {
    if (this.#odd < 0) return;
    this.#step(this.#odd | 0x10000);
    this.#odd = -1;
  }

  /** Folds another hash in (a unit's into the prefix's). */
  mix(o: Hash): void {
    this.#flush();
    o.#flush();
    this.a = Math.imul(this.a ^ o.a, 0x01000193) ^ (o.b >>> 7);
    this.b = Math.imul(this.b ^ o.b, 0x5bd1e995) ^ (o.a >>> 11);
  }

  /** 41 bits in base 36 (8 characters at most). */
  digest(): string {
    this.#flush();
    const high = this.a >>> 0;
    const low = (this.b >>> 0) & 0x1ff;
    return (high * 512 + low).toString(36);
  }
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * The raw span of a marker member of `obj` (its key, value and one separating comma), found back
 * from the value: the bytes the same object has without it.
 */
function memberSpan(raw: string, obj: JsonNode, value: JsonNode): TextEdit | null {
  let i = value.start - 1;
  while (i > obj.start && isSpace(raw.charCodeAt(i))) i--;
  if (raw.charCodeAt(i) !== 0x3a) return null; // ':'
  i--;
  while (i > obj.start && isSpace(raw.charCodeAt(i))) i--;
  if (raw.charCodeAt(i) !== 0x22) return null; // the key's closing quote
  i--;
  while (i > obj.start && !(raw.charCodeAt(i) === 0x22 && raw.charCodeAt(i - 1) !== 0x5c)) i--;
  let start = i;
  let end = value.end;
  let j = start - 1;
  while (j > obj.start && isSpace(raw.charCodeAt(j))) j--;
  if (raw.charCodeAt(j) === 0x2c) start = j;
  else {
    let k = end;
    while (k < obj.end && isSpace(raw.charCodeAt(k))) k++;
    if (raw.charCodeAt(k) === 0x2c) end = k + 1;
  }
  return { start, end, text: "" };
}

/**
 * A string this long is hashed on its length and a sample of it (its ends and evenly spaced
 * pieces), not every character: the cost of a steady turn stays near a scan of the request. A tool
 * output changed in place at the same length outside the sample would read as unchanged; clients
 * do not do that (a stub, a cleared or truncated result all change the length).
 */
export const SAMPLED_CHARS = 32_768;
const SAMPLE_END = 2048;
const SAMPLE_PIECES = 256;
const SAMPLE_PIECE = 8;

function sampledDigest(raw: string, node: JsonNode): string {
  const h = new Hash();
  const n = node.end - node.start;
  h.feed(String(n));
  h.feed(raw, node.start, node.start + SAMPLE_END);
  const step = (n - 2 * SAMPLE_END) / SAMPLE_PIECES;
  for (let k = 0; k < SAMPLE_PIECES; k++) {
    const at = node.start + SAMPLE_END + Math.floor(k * step);
    h.feed(raw, at, at + SAMPLE_PIECE);
  }
  h.feed(raw, node.end - SAMPLE_END, node.end);
  return `\u0003${h.digest()}`;
}

/**
 * What a unit's text is hashed without or in place of: its marker members (and those of the objects
 * inside it, content parts), cut; its long strings, their sampled digest.
 */
function cutsOf(raw: string, node: JsonNode, out: TextEdit[], depth = 0): void {
  if (node.kind === "string") {
    if (node.end - node.start >= SAMPLED_CHARS)
      out.push({ start: node.start, end: node.end, text: sampledDigest(raw, node) });
  } else if (node.kind === "object" && depth < 3) {
    node.keys.forEach((k, i) => {
      const v = node.values[i]!;
      if (!MARKERS.has(k)) cutsOf(raw, v, out, depth + 1);
      else {
        const span = memberSpan(raw, node, v);
        if (span !== null) out.push(span);
      }
    });
  } else if (node.kind === "array" && depth < 3)
    for (const item of node.items) cutsOf(raw, item, out, depth + 1);
}

/**
 * Feeds `[from, to)` of `raw` with `edits` (sorted, non-overlapping) applied: an edit's text in
 * place of its span; an edit that starts before the range and covers it, its text alone.
 */
function feedRange(h: Hash, raw: string, from: number, to: number, edits: readonly TextEdit[]) {
  let at = from;
  for (const e of edits) {
    if (e.end <= at || e.start >= to) continue;
    if (e.start > at) h.feed(raw, at, e.start);
    if (e.text !== "") {
      h.feed("\u0001");
      h.feed(e.text);
    }
    at = Math.max(at, e.end);
  }
  if (at < to) h.feed(raw, at, to);
}

/**
 * A unit's own hash (its section and role included): its raw text without its cache markers, with
 * `edits` applied when given. Anthropic's string shorthand is hashed as the block it stands for.
 */
export function unitHash(raw: string, unit: PromptUnit, edits: readonly TextEdit[] = []): Hash {
  const h = new Hash();
  h.feed(unit.section);
  if (unit.role !== undefined) h.feed(unit.role);
  const { node } = unit;
  if (unit.text === true) h.feed('{"type":"text","text":');
  const cuts: TextEdit[] = [];
  cutsOf(raw, node, cuts);
  const all =
    cuts.length === 0
      ? edits
      : [
          ...edits,
          ...cuts.filter((c) => !edits.some((e) => e.start < c.end && e.end > c.start)),
        ].sort((x, y) => x.start - y.start);
  feedRange(h, raw, node.start, node.end, all);
  if (unit.text === true) h.feed("}");
  return h;
}
