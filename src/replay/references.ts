/**
 * References: places where a later assistant message (its text, or a string in a tool_use input) quotes an
 * exact substring of an earlier tool result that appears nowhere else before it (not in the system prompt,
 * the user's messages or earlier assistant messages). Such a message could only be written by a model that
 * saw that result, so a policy that removed the result must recover it (a recall hop) or the reference is
 * lost. Detected as 24-char windows (at least 8 letters or digits, so runs of punctuation do not count),
 * plus the corpus's own `refs` entries; one reference per (assistant message, source result).
 */
import { textOfResult } from "./blocks.ts";
import type { Message, ReplaySession } from "./types.ts";

export const QUOTE_CHARS = 24;
const MIN_ALNUM = 8;

export interface Reference {
  /** Index of the assistant message that quotes. */
  turn: number;
  quote: string;
  /** tool_use_ids of the earlier results that contain the quote. */
  sources: string[];
}

function strings(value: unknown, out: string[]): void {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value !== null && typeof value === "object")
    for (const v of Object.values(value)) strings(v, out);
}

/** What an assistant message writes: its text and every string in its tool inputs. */
function written(m: Message): string[] {
  if (typeof m.content === "string") return [m.content];
  const out: string[] = [];
  for (const b of m.content) {
    if (b.type === "text" && typeof b.text === "string") out.push(b.text);
    else if (b.type === "tool_use") strings(b.input, out);
  }
  return out;
}

function alnum(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) n++;
  }
  return n;
}

/** Non-result text each message contributes (user text, assistant text and inputs). */
function contextTexts(m: Message): string[] {
  if (m.role === "assistant") return written(m);
  if (typeof m.content === "string") return [m.content];
  return m.content
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string);
}

const memo = new WeakMap<ReplaySession, Reference[]>();

/** References of a session (computed once per session object: replays under several models reuse them). */
export function detectReferences(session: ReplaySession): Reference[] {
  let refs = memo.get(session);
  if (refs === undefined) memo.set(session, (refs = detect(session)));
  return refs;
}

function detect(session: ReplaySession): Reference[] {
  const W = QUOTE_CHARS;
  // Every window an assistant message writes → where (first position per message).
  const wanted = new Map<string, { turn: number; pos: number; text: number }[]>();
  session.messages.forEach((m, turn) => {
    if (m.role !== "assistant") return;
    written(m).forEach((s, text) => {
      const seen = new Set<string>();
      for (let p = 0; p + W <= s.length; p++) {
        const w = s.slice(p, p + W);
        if (seen.has(w) || alnum(w) < MIN_ALNUM) continue;
        seen.add(w);
        let list = wanted.get(w);
        if (list === undefined) wanted.set(w, (list = []));
        list.push({ turn, pos: p, text });
      }
    });
  });
  if (wanted.size === 0 && (session.refs ?? []).length === 0) return [];

  // The first message in which each wanted window appears outside tool results (system = -1).
  const firstContext = new Map<string, number>();
  const scanContext = (s: string, at: number) => {
    for (let p = 0; p + W <= s.length; p++) {
      const w = s.slice(p, p + W);
      if (wanted.has(w) && !firstContext.has(w)) firstContext.set(w, at);
    }
  };
  const system: string[] = [];
  strings(session.system, system);
  for (const s of system) scanContext(s, -1);
  session.messages.forEach((m, i) => {
    for (const s of contextTexts(m)) scanContext(s, i);
  });

  // Results containing each window: (window → [{message index, tool_use_id}]).
  const hits = new Map<string, { at: number; id: string }[]>();
  session.messages.forEach((m, at) => {
    if (m.role !== "user" || typeof m.content === "string") return;
    for (const b of m.content) {
      if (b.type !== "tool_result" || typeof b.tool_use_id !== "string") continue;
      const body = textOfResult(b.content);
      const seen = new Set<string>();
      for (let p = 0; p + W <= body.length; p++) {
        const w = body.slice(p, p + W);
        if (seen.has(w) || !wanted.has(w)) continue;
        seen.add(w);
        let list = hits.get(w);
        if (list === undefined) hits.set(w, (list = []));
        list.push({ at, id: b.tool_use_id });
      }
    }
  });

  const refs: Reference[] = [];
  const taken = new Set<string>();
  const add = (turn: number, quote: string, sources: string[]) => {
    // One reference per (assistant message, source result): a second quote of the same result adds nothing.
    if (sources.some((s) => taken.has(`${turn}\u0000${s}`))) return;
    for (const s of sources) taken.add(`${turn}\u0000${s}`);
    refs.push({ turn, quote, sources });
  };
  for (const [w, places] of hits) {
    for (const { turn } of wanted.get(w)!) {
      const ctx = firstContext.get(w);
      // written before (or by) this very turn outside results: not evidence of having read a result
      if (ctx !== undefined && ctx < turn) continue;
      const sources = places.filter((h) => h.at < turn).map((h) => h.id);
      if (sources.length > 0) add(turn, w, [...new Set(sources)]);
    }
  }
  // The corpus's own refs first: their quotes are checked to be unique, so they are the better evidence.
  const generic = refs.splice(0);
  taken.clear();
  for (const r of session.refs ?? []) add(r.turn, r.quote, [r.source_tool_use_id]);
  for (const r of generic) add(r.turn, r.quote, r.sources);
  return refs.sort((a, b) => a.turn - b.turn || (a.sources[0]! < b.sources[0]! ? -1 : 1));
}
