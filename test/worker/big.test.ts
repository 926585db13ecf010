// The limit path end to end: streamed in, scanned, hashed, written to R2, stubbed, replayed, recalled.
import { describe, expect, it } from "vitest";
import { call, compactPath, conversation, memIdIn, ON, sid, summary } from "./helpers.ts";

describe("a request near the 32 MiB limit", () => {
  it("compacts a 30 MB tool result end to end and recalls from it", async () => {
    const session = sid("big");
    const row = "2026-11-30T12:00:00Z INFO request handled path=/api/items status=200 ms=12\n";
    const big = row.repeat(Math.ceil(30_000_000 / row.length));
    const body = JSON.stringify(conversation(big));
    const res = await call(compactPath(session), { body, config: ON });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(summary(res).offloaded).toBe(1);
    expect(text.length).toBeLessThan(5000);
    const again = await call(compactPath(session), { body, config: ON });
    expect(await again.text()).toBe(text);
    const recall = (await (
      await call(`/v1/sessions/${session}/recall`, {
        body: { mem_id: memIdIn(text), offset: 29_000_000, max_chars: 100 },
      })
    ).json()) as { content: string };
    expect(recall.content).toContain("INFO request handled");
  }, 60_000);
});
