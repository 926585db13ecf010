/**
 * Realistic endings: sessions that stop soon after a stub lands. The corpus sessions run to the end of
 * their task, so a stub always has the rest of the session to pay back its cost; real sessions also stop
 * early (the user interrupts, a budget runs out, the agent gives up), and a stub that lands one to three
 * calls before the end is where the net-saving gate can lose money. `earlyEndings` cuts half of the
 * sessions that hold a result over the size floor (the ones a stub can land on): one such result is drawn,
 * and the session stops one to three calls after the call it arrived on. The draws are hashes of the
 * session id, so every policy and every run sees the same sessions, and sessions keep their file order
 * (what the learned horizon sees first is what a tenant would have seen first). One draw is one
 * sample of where sessions stop: `draw` picks another (0, the default, is the one the published tables
 * use), so a count of dearer sessions can be read as a share over many draws, not one draw's luck.
 */
import { textOfResult } from "./blocks.ts";
import { draw } from "./gaps.ts";
import type { ReplaySession } from "./types.ts";

/** Results over this many chars are the ones a stub can land on (the default size floor). */
export const ENDINGS_MIN_CHARS = 8000;
/** The share of such sessions that are cut. */
export const ENDINGS_SHARE = 0.5;
/** A cut session stops 1 to this many calls after the call its drawn result arrived on. */
export const ENDINGS_MAX_AFTER = 3;

/** The index of the first call whose prompt holds each result over the floor, in prompt order. */
function arrivals(session: ReplaySession): number[] {
  const out: number[] = [];
  session.messages.forEach((m, i) => {
    if (m.role !== "user" || typeof m.content === "string") return;
    for (const b of m.content) {
      if (b.type !== "tool_result" || textOfResult(b.content).length <= ENDINGS_MIN_CHARS) continue;
      const call = session.calls.findIndex((n) => n > i);
      if (call >= 0) out.push(call);
    }
  });
  return out;
}

/** The session stopped after its call `last` (0-based): its messages up to that call's answer. */
export function cutAfter(session: ReplaySession, last: number): ReplaySession {
  if (last >= session.calls.length - 1) return session;
  const calls = session.calls.slice(0, last + 1);
  const end = calls[calls.length - 1]! + 1;
  const messages = session.messages.slice(0, end);
  return {
    ...session,
    messages,
    calls,
    ...(session.times === undefined ? {} : { times: session.times.slice(0, last + 1) }),
    ...(session.refs === undefined ? {} : { refs: session.refs.filter((r) => r.turn < end) }),
  };
}

/**
 * The sessions with realistic endings (see above); sessions not drawn are returned as they are. `n` picks
 * the draw (a non-negative integer; 0, the default, is the published one).
 */
export function earlyEndings(sessions: readonly ReplaySession[], n = 0): ReplaySession[] {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`draw ${n}: a non-negative integer`);
  // draw 0 keeps the keys the published figures were drawn with
  const key = (s: ReplaySession, what: string) => `${s.id}#${what}${n === 0 ? "" : `#${n}`}`;
  return sessions.map((s) => {
    const at = arrivals(s);
    if (at.length === 0 || draw(key(s, "cut")) >= ENDINGS_SHARE) return s;
    const arrival = at[Math.floor(draw(key(s, "result")) * at.length)]!;
    const after = 1 + Math.floor(draw(key(s, "after")) * ENDINGS_MAX_AFTER);
    return cutAfter(s, arrival + after);
  });
}
