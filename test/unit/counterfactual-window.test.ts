/**
 * The billing counterfactual's client prefix, where those very bytes were measured before: a sliding-window
 * client (it keeps its task and its last exchanges) shares only its head with its earlier prompts, and
 * whether that head reaches the provider's minimum (OpenAI: 1,024 tokens) decides whether its calls read
 * anything. The head's estimate, net of the recall tool's declaration, can land on either side of it; an
 * untouched turn whose whole prompt was that head measured it, and that measure wins (the agreement bench's
 * chat-window large/dev-11 under-claimed 4.2% before: its client head, 965 tokens measured, was modelled
 * over 1,024).
 */
import { describe, expect, it } from "vitest";
import type { TurnUsage } from "../../src/core/billing.ts";
import {
  type CounterfactualTurn,
  counterfactualTurns,
  readTurns,
} from "../../src/core/counterfactual.ts";
import { encodeSketch, type SketchMark } from "../../src/core/sketch.ts";
import type { TurnEstimate } from "../../src/core/types.ts";

const MODEL = "gpt-5.4";

function usage(prompt: number, read: number): TurnUsage {
  const first = {
    input: prompt - read,
    cache_read: read,
    cache_write_5m: 0,
    cache_write_1h: 0,
    output: 50,
  };
  return { source: "client", model: MODEL, calls: 1, tokens: first, first, answer_output: 50 };
}

function turn(at: number, marks: SketchMark[], u: TurnUsage): CounterfactualTurn {
  const estimate: TurnEstimate = {
    sent: { request: marks.at(-1)!.a },
    removed: {},
    cached_share: 0,
    ttl: "5m",
    calibrated: false,
    model: MODEL,
    sketch: encodeSketch(marks),
  };
  return { at, shadow: false, estimate, usage: u };
}

// Hashes are base-36 strings in a sketch.
const H = {
  head: "a1",
  sentHead: "b2",
  c1: "c3",
  a1: "d4",
  c2: "e5",
  a2: "f6",
  c3: "g7",
  a3: "h8",
};
/** The head: the system prompt and the task, 800 estimated tokens; sent after the declaration, 950. */
const head = (sent: boolean): SketchMark => ({
  c: 800,
  a: sent ? 950 : 800,
  b: 2,
  hc: H.head,
  ha: sent ? H.sentHead : H.head,
});
const end = (c: number, a: number, hc: string, ha: string): SketchMark => ({ c, a, b: 8, hc, ha });

const turns = [
  // Untouched: the client's whole first prompt is its head, measured at 965 tokens (under 1,024).
  turn(0, [head(false)], usage(965, 0)),
  // The window slides from here: each prompt shares only the head with the ones before it.
  turn(30_000, [head(true), end(9000, 2000, H.c1, H.a1)], usage(2400, 0)),
  turn(60_000, [head(true), end(9500, 2500, H.c2, H.a2)], usage(2900, 1152)),
  turn(90_000, [head(true), end(9800, 3000, H.c3, H.a3)], usage(3400, 1152)),
];

describe("the client's prefix measured before", () => {
  it("is its tokens: a head measured under the minimum is never modelled as read", () => {
    const out = counterfactualTurns(readTurns(turns), { mode: "billed", session: null });
    // The request sent read its head (declaration included) on the last two calls, as measured.
    expect(out[2]!.sent.read).toBeGreaterThanOrEqual(1024);
    expect(out[3]!.sent.read).toBeGreaterThanOrEqual(1024);
    // The client's own head is 965 tokens: no call of it reads anything.
    for (const t of out) expect(t.client.read).toBe(0);
  });

  it("leaves an estimate alone where nothing measured those bytes", () => {
    // The same turns without the untouched first one: the head is modelled from the sent side.
    const out = counterfactualTurns(readTurns(turns.slice(1)), { mode: "billed", session: null });
    expect(out[2]!.client.read).toBeGreaterThan(0);
  });
});
