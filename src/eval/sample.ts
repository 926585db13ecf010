/**
 * Which calls the eval sends. The candidate pass replays every session through `compact` (no
 * provider call) and keeps the calls whose request the config changes: a stub, a shortened result,
 * an extracted attachment. The sample then takes N of them with a fixed seed, spread over sessions
 * (round robin over the sessions in a seeded order) and late in each (a weighted draw without
 * replacement, weight = the call's position in its session), where stubs pile up as they do in a
 * long deployment. A share of the sample is also sent twice with offload off (A/A).
 */
import { REQUEST_CHARS_PER_TOKEN } from "../core/tokens.ts";
import type { ReplaySession } from "../replay/types.ts";
import { random } from "./random.ts";
import { SessionReplay, type TurnSettings } from "./session-replay.ts";
import type { ChangedResult, SampledCall } from "./types.ts";

/** The recorded answer's tokens, the output a call is expected to produce (for the estimate). */
function answerTokens(session: ReplaySession, j: number, maxTokens: number): number {
  const answer = session.messages[session.calls[j]!];
  const chars = answer?.role === "assistant" ? JSON.stringify(answer.content).length : 0;
  const tokens = chars === 0 ? maxTokens / 4 : chars / REQUEST_CHARS_PER_TOKEN;
  return Math.ceil(Math.min(maxTokens, Math.max(16, tokens)));
}

/**
 * Every call of every session whose request the config changes (A/A not yet drawn). `onSession`
 * counts sessions done (progress).
 */
export async function candidateCalls(
  sessions: readonly ReplaySession[],
  settings: TurnSettings,
  onSession?: (done: number, total: number) => void,
): Promise<SampledCall[]> {
  const out: SampledCall[] = [];
  for (const [i, session] of sessions.entries()) {
    const replay = new SessionReplay(session, settings);
    for (let j = 0; j < session.calls.length; j++) {
      const turn = await replay.compactCall(j);
      const changed: ChangedResult[] = turn.decisions.flatMap((d) =>
        d.action === "kept"
          ? []
          : [
              {
                tool_use_id: d.tool_use_id,
                tool_name: d.tool_name,
                action: d.action,
                mem_id: d.mem_id,
                chars: d.chars,
              },
            ],
      );
      const attachments = turn.report.attachments?.replaced ?? 0;
      if (!turn.changed || changed.length + attachments === 0) continue;
      out.push({
        id: `${i}:${session.id}#${j}`,
        session: session.id,
        session_index: i,
        call: j,
        calls: session.calls.length,
        aa: false,
        tokens_a: turn.report.tokens_before,
        tokens_b: turn.report.tokens_after,
        tokens_out: answerTokens(session, j, settings.request.maxTokens),
        changed,
        attachments,
      });
    }
    onSession?.(i + 1, sessions.length);
  }
  return out;
}

/**
 * `n` candidates drawn with `seed`: spread over sessions, late in each; the first
 * round(aaShare × n) of a seeded shuffle of them also get an A/A pair. In input order.
 */
export function drawSample(
  candidates: readonly SampledCall[],
  n: number,
  seed: number,
  aaShare: number,
): SampledCall[] {
  const rand = random(seed);
  const bySession = new Map<number, { call: SampledCall; key: number }[]>();
  for (const c of candidates) {
    // Efraimidis–Spirakis: the largest ln(u)/w first is a weighted draw without replacement.
    const key = Math.log(rand() || Number.MIN_VALUE) / ((c.call + 1) / c.calls);
    const list = bySession.get(c.session_index) ?? [];
    list.push({ call: c, key });
    bySession.set(c.session_index, list);
  }
  const queues = shuffle(
    [...bySession.keys()].sort((a, b) => a - b),
    rand,
  ).map((s) => bySession.get(s)!.sort((a, b) => b.key - a.key));
  const picked: SampledCall[] = [];
  for (let round = 0; picked.length < n && queues.some((q) => q.length > round); round++)
    for (const q of queues) {
      if (picked.length >= n) break;
      const next = q[round];
      if (next !== undefined) picked.push(next.call);
    }
  const aa = new Set(
    shuffle([...picked.keys()], rand).slice(0, Math.round(aaShare * picked.length)),
  );
  return picked
    .map((c, i) => ({ ...c, aa: aa.has(i) }))
    .sort((a, b) => a.session_index - b.session_index || a.call - b.call);
}

/** Fisher–Yates with the given generator (a copy). */
function shuffle<T>(items: T[], rand: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
