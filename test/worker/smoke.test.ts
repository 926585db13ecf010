import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { compact, MemoryStore } from "../../src/lib.ts";

describe("workerd", () => {
  it("serves /healthz", async () => {
    const res = await SELF.fetch("https://edge-offload.test/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("runs the core inside workerd", async () => {
    const body = "x".repeat(70_000);
    const request = {
      model: "claude-opus-4-5",
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: body }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] },
      ],
    };
    const out = await compact({
      request,
      session: "w1",
      store: new MemoryStore(),
      config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
    });
    expect(out.decisions[0]?.action).toBe("offloaded");
  });
});
