/**
 * A turn's sketch: the client's request (C) and the request sent (A) side by side at a bounded set
 * of unit boundaries ("marks"), each with the estimated tokens before it in both, the prefix
 * hashes of both and the breakpoints either sets there. It is what the billing counterfactual
 * (counterfactual.ts) runs the provider's cache rules over, so the report can bill the client's own
 * requests as the provider would have, turn after turn, without keeping the requests.
 *
 * The marks: the first units, every unit of a geometric ladder after them, the last units (where
 * earlier requests ended: what an append-only client's provider reads), the ends of the tools and
 * system sections, every breakpoint, the end of the previous request as this one repeats it, and
 * the end. A read is found at a mark or not at all: between two marks the sketch cannot tell, so it
 * counts the shorter prefix (never a read across a change).
 *
 * Encoded as one short string on the turn's log line (about 25 characters a mark, 60 marks at
 * most).
 */
import type { Breakpoint } from "./formats/types.ts";
import { Hash, type PromptUnit, type TextEdit, unitHash } from "./prompt-units.ts";
import { REQUEST_CHARS_PER_TOKEN } from "./tokens.ts";

export const SKETCH_VERSION = "s1";
const HEAD = 6;
const TAIL = 24;
const LADDER = 1.5;
const MAX_MARKS = 60;
/** Roles (and Responses item types) of the model's output. */
const OUTPUT_ROLES = new Set(["assistant", "function_call", "custom_tool_call", "reasoning"]);

export interface SketchMark {
  /** Estimated tokens before the mark: in the client's request, and in the one sent. */
  c: number;
  a: number;
  /** Units before the mark (what a lookback counts). */
  b: number;
  /** Prefix hashes up to the mark. */
  hc: string;
  ha: string;
  /** A breakpoint ends at the mark: the client's, and in the request sent (the anchor too). */
  bc?: Breakpoint["ttl"];
  ba?: Breakpoint["ttl"];
}

/** What a result's replacement takes out, in estimated tokens, where it lies. */
export interface SketchSite {
  /** Raw offset of the result's content (the edit that replaces it starts there). */
  start: number;
  end: number;
  /** Estimated tokens of the content as the client sent it, and as it goes out. */
  tokens: number;
  sent_tokens: number;
}

export interface SketchInput {
  raw: string;
  units: readonly PromptUnit[];
  /** The client's breakpoints (the analysis'), in prompt order. */
  breakpoints: readonly Breakpoint[];
  /**
   * The breakpoints of the request sent, where they differ from the client's (the breakpoint
   * move takes the client's markers after a fresh result and puts one before it); the anchor
   * apart. Absent: the client's.
   */
  sent_breakpoints?: readonly Breakpoint[];
  /** Every tool result with content (kept ones too: their estimates place the marks). */
  sites: readonly SketchSite[];
  /** The edits applied to the request, the recall tool's declaration apart (none in shadow). */
  edits: readonly TextEdit[];
  /**
   * The recall tool declared this turn: its text and estimated tokens, at the end of `tools`, or at raw
   * offset `at` in `messages` (declared inline).
   */
  declaration: { text: string; tokens: number; at?: number } | null;
  /** The anchor's breakpoint (the raw offset of its insertion), when one was placed. */
  anchor: { at: number; ttl: Breakpoint["ttl"] } | null;
}

/**
 * The unit whose raw span holds an offset (-1: none). Units are in prompt order, which need not be
 * the order of the request's members: the search runs over them sorted by where they are.
 */
function unitFinder(units: readonly PromptUnit[]): (offset: number) => number {
  const byStart = units
    .map((_, i) => i)
    .sort((x, y) => units[x]!.node.start - units[y]!.node.start);
  return (offset) => {
    let lo = 0;
    let hi = byStart.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const u = units[byStart[mid]!]!.node;
      if (offset < u.start) hi = mid - 1;
      else if (offset > u.end) lo = mid + 1;
      else return byStart[mid]!;
    }
    return -1;
  };
}

/** Index of the unit whose prompt-order span ends at or after `position` (a breakpoint's unit). */
function unitEnding(units: readonly PromptUnit[], position: number): number {
  for (let i = 0; i < units.length; i++) if (units[i]!.position >= position) return i;
  return units.length - 1;
}

/** The units kept as marks (indices, ascending). */
function markIndices(units: readonly PromptUnit[], forced: ReadonlySet<number>): number[] {
  const n = units.length;
  const keep = new Set<number>();
  for (let i = 0; i < Math.min(HEAD, n); i++) keep.add(i);
  for (let x = HEAD; x < n - TAIL; x = Math.max(x + 1, Math.floor(x * LADDER))) keep.add(x);
  for (let i = Math.max(0, n - TAIL); i < n; i++) keep.add(i);
  for (const i of forced) keep.add(i);
  let out = [...keep].sort((a, b) => a - b);
  // Over the bound (many breakpoints are not possible: 4 at most): the ladder thins first.
  if (out.length > MAX_MARKS)
    out = out.filter((i, k) => forced.has(i) || i >= n - TAIL || i < HEAD || k % 2 === 0);
  return out;
}

/** The sketch of a turn, marks in prompt order. */
export function sketchTurn(input: SketchInput): SketchMark[] {
  const { raw, units } = input;
  if (units.length === 0) return [];
  const edits = [...input.edits].sort((a, b) => a.start - b.start);
  const unitAt = unitFinder(units);
  const siteAt = new Map(input.sites.map((s) => [s.start, s]));
  // Per unit: its content tokens (results at their estimates, the rest by chars), what the edits
  // take out of it, and the edits inside it.
  const own = units.map((u) => (u.node.end - u.node.start) / REQUEST_CHARS_PER_TOKEN);
  const cut = units.map(() => 0);
  for (const s of input.sites) {
    const i = unitAt(s.start);
    if (i >= 0) own[i]! += s.tokens - (s.end - s.start) / REQUEST_CHARS_PER_TOKEN;
  }
  const editsOf: TextEdit[][] = units.map(() => []);
  for (const e of edits) {
    const i = unitAt(e.start);
    if (i < 0) continue;
    editsOf[i]!.push(e);
    const site = siteAt.get(e.start);
    cut[i]! +=
      site === undefined
        ? (e.end - e.start - e.text.length) / REQUEST_CHARS_PER_TOKEN
        : site.tokens - site.sent_tokens;
  }
  const bc = new Map<number, Breakpoint["ttl"]>();
  for (const b of input.breakpoints) bc.set(unitEnding(units, b.position), b.ttl);
  const ba = new Map<number, Breakpoint["ttl"]>();
  if (input.sent_breakpoints === undefined) for (const [i, ttl] of bc) ba.set(i, ttl);
  else for (const b of input.sent_breakpoints) ba.set(unitEnding(units, b.position), b.ttl);
  if (input.anchor !== null) {
    const i = unitAt(input.anchor.at);
    if (i >= 0) ba.set(i, input.anchor.ttl);
  }
  // The declaration sits at the end of `tools` (or inline, before the first unit of messages past its
  // offset): the sent prefix differs from the first unit after.
  const afterTools = units.findIndex((u) => u.section !== "tools");
  const at = input.declaration?.at;
  const place =
    at === undefined
      ? afterTools
      : units.findIndex((u) => u.section === "messages" && u.node.start >= at);
  const declareAt = input.declaration === null ? -1 : place === -1 ? units.length : place;
  const forced = new Set<number>([...bc.keys(), ...ba.keys(), units.length - 1]);
  if (afterTools > 0) forced.add(afterTools - 1);
  const lastSystem = units.findLastIndex((u) => u.section === "system");
  if (lastSystem >= 0) forced.add(lastSystem);
  // Where the previous request (as this one repeats it) ended: before the newest run of the
  // model's output (an append-only client sends it back with what followed it), and before the
  // last message.
  const lastOutput = units.findLastIndex((u) => u.role !== undefined && OUTPUT_ROLES.has(u.role));
  let runStart = lastOutput;
  for (let i = lastOutput - 1; i >= 0; i--) {
    const role = units[i]!.role;
    if (role === undefined) continue;
    if (!OUTPUT_ROLES.has(role)) break;
    runStart = i;
  }
  if (runStart > 0) forced.add(runStart - 1);
  const lastMessage = units.at(-1)!.message;
  const firstOfLast = units.findIndex((u) => u.message === lastMessage);
  if (lastMessage >= 0 && firstOfLast > 0) forced.add(firstOfLast - 1);
  const keep = new Set(markIndices(units, forced));

  const hc = new Hash();
  const ha = new Hash();
  let c = 0;
  let a = 0;
  const marks: SketchMark[] = [];
  units.forEach((u, i) => {
    if (i === declareAt) {
      const d = new Hash();
      d.feed("\u0002recall-tool");
      d.feed(input.declaration!.text);
      ha.mix(d);
      a += input.declaration!.tokens;
    }
    const h = unitHash(raw, u);
    hc.mix(h);
    ha.mix(editsOf[i]!.length === 0 ? h : unitHash(raw, u, editsOf[i]!));
    c += own[i]!;
    a += own[i]! - cut[i]!;
    if (!keep.has(i)) return;
    const hcd = hc.digest();
    marks.push({
      c: Math.round(c),
      a: Math.round(a),
      b: i + 1,
      hc: hcd,
      ha: ha.digest(),
      ...(bc.has(i) ? { bc: bc.get(i)! } : {}),
      ...(ba.has(i) ? { ba: ba.get(i)! } : {}),
    });
  });
  return marks;
}

const TTL_CODE = { "5m": 1, "1h": 2 } as const;
const TTL_OF = [undefined, "5m", "1h"] as const;

/** The marks as one string: `s1;c,a,b,hc,ha,f;…` (numbers base 36, `ha` empty when equal to `hc`). */
export function encodeSketch(marks: readonly SketchMark[]): string {
  const parts = marks.map((m) => {
    const f =
      (m.bc === undefined ? 0 : TTL_CODE[m.bc]) * 3 + (m.ba === undefined ? 0 : TTL_CODE[m.ba]);
    return [
      m.c.toString(36),
      m.a.toString(36),
      m.b.toString(36),
      m.hc,
      m.ha === m.hc ? "" : m.ha,
      f === 0 ? "" : String(f),
    ].join(",");
  });
  return [SKETCH_VERSION, ...parts].join(";");
}

/** A base-36 number of at most `max` digits, or NaN. */
function base36(s: string | undefined, max: number): number {
  if (s === undefined || s.length === 0 || s.length > max) return Number.NaN;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 122 ? c - 87 : -1;
    if (d < 0) return Number.NaN;
    n = n * 36 + d;
  }
  return n;
}

/** The marks of an encoded sketch; null when it is not one this version reads. */
export function decodeSketch(text: unknown): SketchMark[] | null {
  return typeof text === "string" ? parse(text) : null;
}

function parse(text: string): SketchMark[] | null {
  const parts = text.split(";");
  if (parts[0] !== SKETCH_VERSION || parts.length < 2) return null;
  const out: SketchMark[] = [];
  for (let i = 1; i < parts.length; i++) {
    const [c, a, b, hc, ha, f] = parts[i]!.split(",");
    const m: SketchMark = {
      c: base36(c, 8),
      a: base36(a, 8),
      b: base36(b, 8),
      hc: hc ?? "",
      ha: ha === "" || ha === undefined ? (hc ?? "") : ha,
    };
    if (Number.isNaN(m.c + m.a + m.b) || Number.isNaN(base36(m.hc, 9))) return null;
    if (m.ha !== m.hc && Number.isNaN(base36(m.ha, 9))) return null;
    const flags = f === undefined || f === "" ? 0 : base36(f, 1);
    if (!(flags >= 0 && flags <= 8)) return null;
    const bc = TTL_OF[Math.floor(flags / 3)];
    const ba = TTL_OF[flags % 3];
    if (bc !== undefined) m.bc = bc;
    if (ba !== undefined) m.ba = ba;
    out.push(m);
  }
  return out;
}
