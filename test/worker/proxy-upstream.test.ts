// A provider that cannot be reached, through the proxy routes: the error names the upstream's host and the
// variable that sets it (ANTHROPIC_BASE_URL / OPENAI_BASE_URL), whether the call fails up front, the stream is
// cut, or the upstream was overridden to a local address.
import { createExecutionContext, env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.ts";
import {
  anthropicEvents,
  anthropicMessage,
  anthropicRequest,
  chatRequest,
} from "../support/providers.ts";
import { sid } from "./helpers.ts";
import { mockProvider, proxy, proxyRequest, readEvents, sseReply } from "./proxy-mock.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

async function errorMessage(res: Response): Promise<string> {
  expect(res.status).toBe(502);
  return ((await res.json()) as { error: { message: string } }).error.message;
}

describe("an unreachable upstream", () => {
  it("names the Anthropic host and ANTHROPIC_BASE_URL", async () => {
    mockProvider(new TypeError("Network connection lost."));
    const res = await proxy("/anthropic/v1/messages", anthropicRequest(), { session: sid("up") });
    expect(await errorMessage(res)).toBe(
      "edge-offload could not reach the anthropic upstream (ANTHROPIC_BASE_URL) at api.anthropic.com: Network connection lost.",
    );
  });

  it("names the OpenAI host and OPENAI_BASE_URL, with compaction on", async () => {
    mockProvider(new TypeError("connect ECONNREFUSED"));
    const res = await proxy("/openai/v1/chat/completions", chatRequest(), {
      session: sid("up"),
      config: ON,
    });
    expect(await errorMessage(res)).toBe(
      "edge-offload could not reach the openai upstream (OPENAI_BASE_URL) at api.openai.com: connect ECONNREFUSED",
    );
  });

  it("names a local override's host:port", async () => {
    const app = createApp({
      log: () => {},
      fetch: async () => Promise.reject(new TypeError("fetch failed")),
    });
    const vars = { ...env, ANTHROPIC_BASE_URL: "http://127.0.0.1:9" };
    const res = await app.fetch(
      proxyRequest("/anthropic/v1/messages", anthropicRequest(), { session: sid("up") }),
      vars,
      createExecutionContext(),
    );
    expect(await errorMessage(res)).toContain("(ANTHROPIC_BASE_URL) at 127.0.0.1:9: fetch failed");
  });

  it("names them when the stream is cut mid-way", async () => {
    const events = anthropicEvents(
      anthropicMessage("msg_cut", [{ text: "Partial answer here." }], { input: 5, output: 5 }),
    );
    mockProvider(sseReply(events, { cut: 4 }));
    const res = await proxy(
      "/anthropic/v1/messages",
      { ...anthropicRequest(), stream: true },
      { session: sid("cut"), config: ON },
    );
    const { events: got } = await readEvents(res);
    const last = JSON.parse(got[got.length - 1]!.data) as { error: { message: string } };
    expect(last.error.message).toContain(
      "the anthropic upstream's stream (ANTHROPIC_BASE_URL) from api.anthropic.com was cut (Network connection lost.)",
    );
  });
});
