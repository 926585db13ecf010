/**
 * A recorded agent trace (test/fixtures/agent-traces) grown into a long session, one request at a time: the
 * trace's own requests first (side calls left out), then one more call and result per turn, repeating the
 * trace's pairs in order with fresh ids and each result's text marked with its turn (no two the same), the
 * agent's cache marker moved to the newest block as Claude Code moves it. The session holds only the
 * agent's current history, so what it keeps is bounded by the agent's context, not by the turns run; the
 * agent's compaction replaces that history (agent-compaction.ts).
 *
 * Pairs whose call is itself large are not repeated: the Codex recording's two `print` steps carry the
 * printed text in the call's own input (the scripted model typed 78 KB of it), which no model does turn
 * after turn and no tool-result policy can touch.
 */
import type { TurnDecision } from "../../src/core/types.ts";
import { type AgentTrace, expandTrace } from "../../test/support/agent-traces.ts";
import {
  type CompactionModel,
  compactedHistory,
  type Json,
  openingEnd,
  summaryRequest,
} from "./agent-compaction.ts";

/** A repeated pair's call is at most this long (JSON chars). */
const MAX_CALL_CHARS = 2_000;

const listKey = (req: Json): "messages" | "input" => ("messages" in req ? "messages" : "input");

/** A call and its result, as consecutive items of the agent's own history. */
function pairsOf(items: readonly Json[]): Json[][] {
  const out: Json[][] = [];
  for (let i = 0; i + 1 < items.length; i++) {
    const a = items[i]!;
    const b = items[i + 1]!;
    const anthropic =
      a.role === "assistant" &&
      Array.isArray(a.content) &&
      a.content.some((x: Json) => x.type === "tool_use") &&
      Array.isArray(b.content) &&
      b.content.some((x: Json) => x.type === "tool_result");
    const responses =
      typeof a.type === "string" &&
      a.type.endsWith("_call") &&
      b.type === `${a.type}_output` &&
      a.call_id === b.call_id;
    if (anthropic || responses) out.push([a, b]);
  }
  return out;
}

/** The ids of the tool results an item holds. */
export function resultIds(item: Json): string[] {
  if (Array.isArray(item.content))
    return (item.content as Json[])
      .filter((b) => b.type === "tool_result")
      .map((b) => String(b.tool_use_id));
  return typeof item.type === "string" && item.type.endsWith("_output")
    ? [String(item.call_id)]
    : [];
}

/** The longest string in a value, its start overwritten by `mark` (same length). */
function markLongest(value: unknown, mark: string): void {
  let best: { holder: Json | unknown[]; key: string | number; len: number } | null = null;
  const walk = (v: unknown) => {
    if (Array.isArray(v))
      v.forEach((x, i) => {
        if (typeof x === "string" && x.length > (best?.len ?? 0))
          best = { holder: v, key: i, len: x.length };
        else walk(x);
      });
    else if (typeof v === "object" && v !== null)
      for (const [k, x] of Object.entries(v as Json)) {
        if (typeof x === "string" && x.length > (best?.len ?? 0))
          best = { holder: v as Json, key: k, len: x.length };
        else walk(x);
      }
  };
  walk(value);
  if (best === null) return;
  const b = best as { holder: Json & unknown[]; key: string & number };
  const s = b.holder[b.key] as unknown as string;
  b.holder[b.key] = (mark + s.slice(mark.length)) as never;
}

/** Moves Anthropic's message cache marker to the newest block (as Claude Code does each turn). */
function moveMarker(messages: Json[]): void {
  let marker: unknown = null;
  for (const m of messages)
    if (Array.isArray(m.content))
      for (const b of m.content as Json[])
        if (b.cache_control !== undefined) {
          marker = b.cache_control;
          delete b.cache_control;
        }
  const last = messages[messages.length - 1];
  if (marker !== null && last !== undefined && Array.isArray(last.content))
    (last.content as Json[])[(last.content as Json[]).length - 1]!.cache_control = marker;
}

export class AgentSession {
  readonly #recorded: string[];
  readonly #skeleton: Json;
  readonly #key: "messages" | "input";
  readonly #pairs: string[];
  #items: Json[];
  /** How many first items open the session (kept through every compaction). */
  readonly #opening: number;
  #turn = 0;
  #repeat = 0;
  /** Every tool result the session has produced. */
  readonly produced = new Set<string>();

  constructor(trace: AgentTrace) {
    this.#recorded = expandTrace(trace).filter(
      (_, i) => trace.requests[i]!.phase !== "count_tokens",
    );
    const template = JSON.parse(this.#recorded[this.#recorded.length - 1]!) as Json;
    this.#key = listKey(template);
    this.#items = template[this.#key] as Json[];
    this.#opening = openingEnd(this.#items);
    const { [this.#key]: _, ...skeleton } = template;
    this.#skeleton = skeleton;
    this.#pairs = pairsOf(this.#items)
      .filter(([call]) => JSON.stringify(call).length <= MAX_CALL_CHARS)
      .map((pair) => JSON.stringify(pair));
    if (this.#pairs.length === 0) throw new Error(`${trace.agent}: no pair to repeat`);
  }

  /** The agent's next request, as it sends it. */
  next(): string {
    const turn = this.#turn++;
    if (turn < this.#recorded.length) {
      const text = this.#recorded[turn]!;
      for (const item of (JSON.parse(text) as Json)[this.#key] as Json[])
        for (const id of resultIds(item)) this.produced.add(id);
      return text;
    }
    const k = ++this.#repeat;
    const text = this.#pairs[(k - 1) % this.#pairs.length]!;
    const ids = new Set<string>();
    for (const m of text.matchAll(/"(?:id|tool_use_id|call_id)":"([^"]+)"/g)) ids.add(m[1]!);
    let renamed = text;
    for (const id of ids) renamed = renamed.split(`"${id}"`).join(`"${id}_x${k}"`);
    const [call, result] = JSON.parse(renamed) as [Json, Json];
    markLongest(result, `#${k} `);
    this.#items.push(call, result);
    for (const id of resultIds(result)) this.produced.add(id);
    if (this.#key === "messages") moveMarker(this.#items);
    return JSON.stringify({ ...this.#skeleton, [this.#key]: this.#items });
  }

  /** The agent's summary call over its history as it holds it now. */
  summaryRequest(model: CompactionModel): string {
    this.#catchUp();
    return JSON.stringify(summaryRequest(model, this.#skeleton, this.#items));
  }

  /** The agent compacts: its history becomes what it keeps. */
  compact(model: CompactionModel): void {
    this.#catchUp();
    this.#items = compactedHistory(model, this.#items, this.#opening);
    if (this.#key === "messages") moveMarker(this.#items);
  }

  /** The results still in the agent's history (whole, or behind a stub the proxy puts there). */
  held(): Set<string> {
    this.#catchUp();
    return new Set(this.#items.flatMap(resultIds));
  }

  /** While the recorded requests run, the history is the last one sent. */
  #catchUp(): void {
    if (this.#turn === 0 || this.#turn > this.#recorded.length) return;
    if (this.#repeat > 0) return;
    const sent = JSON.parse(this.#recorded[this.#turn - 1]!) as Json;
    this.#items = sent[this.#key] as Json[];
  }
}

/**
 * The session's results still reachable: in the agent's history (`held`) and, where the last request
 * sent one as a stub (its `decisions`), behind a body the ledger still holds (`hasBody`): one recall
 * reads it. A result the agent's compaction dropped is lost, whatever the ledger holds.
 */
export async function reachable(
  produced: ReadonlySet<string>,
  held: ReadonlySet<string>,
  decisions: readonly TurnDecision[],
  hasBody: (memId: string) => Promise<boolean>,
): Promise<{ reachable: number; stubs: number }> {
  let lost = 0;
  let stubs = 0;
  for (const d of decisions) {
    if (d.action !== "offloaded" || !held.has(d.tool_use_id) || !produced.has(d.tool_use_id))
      continue;
    stubs++;
    if (d.mem_id === null || !(await hasBody(d.mem_id))) lost++;
  }
  let kept = 0;
  for (const id of produced) if (held.has(id)) kept++;
  return { reachable: kept - lost, stubs };
}
