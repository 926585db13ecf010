/**
 * References: places where a later assistant message (its text, or a string in a tool_use input) quotes an
 * exact substring of an earlier tool result that appears nowhere else before it (not in the system prompt,
 * the user's messages or earlier assistant messages). Such a message could only be written by a model that
 * saw that result, so a policy that removed the result must recover it (a recall hop) or the reference is
 * lost. Three kinds of evidence, best first:
 * - `corpus`: the corpus's own `refs` entries (their quotes are checked to be unique);
 * - `quote`: a 24-char window (at least 8 letters or digits, so runs of punctuation do not count);
 * - `token`: a distinctive token (tokens.ts: an order id, a SHA, a path, a long number) that the assistant
 *   writes for the first time, that appears in exactly one earlier result and in no earlier system, tool,
 *   user or assistant text (a substring there is enough to disqualify it).
 * One reference per (assistant message, source result), of the best kind found.
 */
import { textOfResult } from "./blocks.ts";
import { distinctiveTokens, forEachBodyToken } from "./tokens.ts";
import type { Message, ReplaySession } from "./types.ts";

export const QUOTE_CHARS = 24;
const MIN_ALNUM = 8;

export type ReferenceKind = "corpus" | "quote" | "token";
export const REFERENCE_KINDS: readonly ReferenceKind[] = ["corpus", "quote", "token"];

export interface Reference {
  kind: ReferenceKind;
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
  const add = (kind: ReferenceKind, turn: number, quote: string, sources: string[]) => {
    // One reference per (assistant message, source result): a second quote of the same result adds nothing.
    if (sources.some((s) => taken.has(`${turn}\u0000${s}`))) return;
    for (const s of sources) taken.add(`${turn}\u0000${s}`);
    refs.push({ kind, turn, quote, sources });
  };
  for (const [w, places] of hits) {
    for (const { turn } of wanted.get(w)!) {
      const ctx = firstContext.get(w);
      // written before (or by) this very turn outside results: not evidence of having read a result
      if (ctx !== undefined && ctx < turn) continue;
      const sources = places.filter((h) => h.at < turn).map((h) => h.id);
      if (sources.length > 0) add("quote", turn, w, [...new Set(sources)]);
    }
  }
  // The corpus's own refs first: their quotes are checked to be unique, so they are the better evidence.
  const generic = refs.splice(0);
  taken.clear();
  for (const r of session.refs ?? []) add("corpus", r.turn, r.quote, [r.source_tool_use_id]);
  for (const r of generic) add(r.kind, r.turn, r.quote, r.sources);
  for (const r of tokenReferences(session)) add(r.kind, r.turn, r.quote, r.sources);
  return refs.sort((a, b) => a.turn - b.turn || (a.sources[0]! < b.sources[0]! ? -1 : 1));
}

/** Token references: each distinctive token at the first assistant message that writes it. */
function tokenReferences(session: ReplaySession): Reference[] {
  const first = new Map<string, number>();
  session.messages.forEach((m, turn) => {
    if (m.role !== "assistant") return;
    for (const s of written(m))
      for (const t of distinctiveTokens(s)) if (!first.has(t)) first.set(t, turn);
  });
  if (first.size === 0) return [];
  // Written before, outside results (a substring is enough): not evidence of having read a result.
  const context: { at: number; text: string }[] = [];
  const system: string[] = [];
  strings(session.system, system);
  strings(session.tools, system);
  for (const text of system) context.push({ at: -1, text });
  session.messages.forEach((m, at) => {
    for (const text of contextTexts(m)) context.push({ at, text });
  });
  for (const [t, turn] of first)
    if (context.some((c) => c.at < turn && c.text.includes(t))) first.delete(t);

  // The earlier results holding each token (as a token, or a part of a path).
  const holders = new Map<string, string[]>();
  session.messages.forEach((m, at) => {
    if (m.role !== "user" || typeof m.content === "string") return;
    for (const b of m.content) {
      if (b.type !== "tool_result" || typeof b.tool_use_id !== "string") continue;
      const id = b.tool_use_id;
      forEachBodyToken(textOfResult(b.content), (t) => {
        const turn = first.get(t);
        if (turn === undefined || at >= turn) return;
        let list = holders.get(t);
        if (list === undefined) holders.set(t, (list = []));
        if (!list.includes(id)) list.push(id);
      });
    }
  });
  const out: Reference[] = [];
  for (const [t, ids] of holders)
    if (ids.length === 1) out.push({ kind: "token", turn: first.get(t)!, quote: t, sources: ids });
  // Deterministic order: by turn, then by token.
  return out.sort((a, b) => a.turn - b.turn || (a.quote < b.quote ? -1 : 1));
}
