/**
 * What a turn hands its store keeps nothing of the request it was cut from. A string sliced from a long
 * one can be a view on it (V8 makes one from 13 chars), so an id keying a session's records, or a body
 * kept by the ledger, would hold the whole request alive: every turn's request, for each result it
 * introduced, in a store that lives as long as its process (the library's MemoryStore). That held a
 * 400-turn agents bench to 1.4 GB and growing with the square of the turns.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, textBody } from "../support/requests.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const RESULT = 60_000;
const TURNS = 30;

/**
 * A turn's request, serialized anew (its own string), ids long enough to be sliced, results on one line:
 * a string without escapes is read as a slice of the request (an escaped one is parsed anew).
 */
function request(n: number): string {
  const turns = Array.from({ length: n }, (_, i) => ({
    id: `toolu_retention_${String(i).padStart(8, "0")}`,
    name: "read_a_rather_long_tool_name",
    result: textBody(RESULT, `r${i}`).replaceAll("\n", " "),
  }));
  return JSON.stringify(conversation(turns, { model: "claude-sonnet-4-6" }));
}

async function session(config: Record<string, unknown>): Promise<number> {
  const store = new MemoryStore();
  const before = heap();
  let offloaded = 0;
  for (let n = 1; n <= TURNS; n++) {
    const out = await compact({ request: request(n), session: "retention", store, config });
    offloaded = out.decisions.filter((d) => d.action === "offloaded").length;
  }
  const held = heap() - before;
  expect(offloaded).toBeGreaterThan(0);
  // Keep the store alive through the measure.
  expect(await store.sessionReport({ tenant: "default", session: "retention" })).not.toBeNull();
  return held;
}

describe("a session's store", () => {
  // The requests sum to ~28M chars; the results the store may keep (bodies, records) to ~2M.
  const bound = 8 * 1024 * 1024;

  it("holds its records, not the requests their ids were read from", async () => {
    const held = await session({
      tool_result_compaction_enabled: true,
      tool_result_offload_enabled: true,
      tool_result_large_offload_threshold_chars: 1_000_000,
      tool_result_context_window_tokens: 200_000,
      tool_result_context_pressure_share: 0.9,
      tool_result_context_pressure_target: 0.2,
    });
    expect(held).toBeLessThan(bound);
  });

  it("holds its bodies, not the requests they were cut from", async () => {
    const held = await session({
      tool_result_compaction_enabled: true,
      tool_result_offload_enabled: true,
      tool_result_large_offload_threshold_chars: 50_000,
    });
    expect(held).toBeLessThan(bound);
  });
});
