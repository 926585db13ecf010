/**
 * A recall the proxy answers on a hostile body (40,000 levels of nesting) never takes the conversation down:
 * a hop gets an answer, a streamed mixed turn reaches its last event, and the remembered call replayed on
 * every later turn does not fail those turns.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  anthropicEvents,
  anthropicMessage,
  anthropicRequest,
  memIdIn,
  ON,
  RECALL_NAME,
} from "../support/providers.ts";
import { sid } from "./helpers.ts";
import {
  jsonReply,
  mockProvider,
  proxy,
  proxySummary,
  readEvents,
  sseReply,
} from "./proxy-mock.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

const MESSAGES = "/anthropic/v1/messages";
const DEEP = `${"[".repeat(40_000)}${"]".repeat(40_000)}`;
const hello = anthropicMessage("msg_hello", [{ text: "Hello." }], { input: 10, output: 2 });

/** The usual conversation, with the deep body as its settled large result (toolu_1). */
function deepRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const req = anthropicRequest(extra);
  const messages = structuredClone(req.messages) as { content: { content?: unknown }[] }[];
  messages[2]!.content[0]!.content = DEEP;
  return { ...req, messages };
}

describe("proxy: a recall on a hostile body", () => {
  it("a hop answers it and the turn completes", async () => {
    const session = sid("deep-hop");
    const seen = mockProvider(
      (s) =>
        jsonReply(
          anthropicMessage(
            "msg_1",
            [
              {
                call: RECALL_NAME,
                id: "toolu_r",
                input: { mem_id: memIdIn(s.body), json_path: "$" },
              },
            ],
            { input: 10, output: 5 },
          ),
        ),
      jsonReply(hello),
    );
    const res = await proxy(MESSAGES, deepRequest(), { session, config: ON });
    expect(res.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.body).toContain("toolu_r");
    expect(proxySummary(res).proxy).toMatchObject({ hops: 1, recalls: 1, ending: "done" });
  });

  it("a streamed mixed turn reaches message_stop, and every later turn of the conversation still works", async () => {
    const session = sid("deep-mixed");
    const seen = mockProvider(
      (s) =>
        sseReply(
          anthropicEvents(
            anthropicMessage(
              "msg_m",
              [
                { call: "status", id: "toolu_c1", input: {} },
                {
                  call: RECALL_NAME,
                  id: "toolu_r9",
                  input: { mem_id: memIdIn(s.body), json_path: "$" },
                },
              ],
              { input: 10, output: 5 },
            ),
          ),
        ),
      jsonReply(hello),
      jsonReply(hello),
    );
    const first = await proxy(MESSAGES, deepRequest({ stream: true }), { session, config: ON });
    expect(first.status).toBe(200);
    const { events, comment } = await readEvents(first);
    expect(events.map((e) => e.event).at(-1)).toBe("message_stop");
    expect(comment).toMatchObject({ ending: "mixed", memos: 1, recalls: 1 });

    const history = deepRequest();
    const next = {
      ...history,
      messages: [
        ...(history.messages as object[]),
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_c1", name: "status", input: {} }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_c1", content: "green" }],
        },
      ],
    };
    for (let turn = 0; turn < 2; turn++) {
      const res = await proxy(MESSAGES, next, { session, config: ON });
      expect(res.status, `turn ${turn + 2}`).toBe(200);
      expect(proxySummary(res).proxy).toMatchObject({ spliced: 1 });
    }
    // The replayed answer is the same bytes each time (sticky), and it is the model's answer to its call.
    expect(seen[2]!.body).toBe(seen[1]!.body);
    const sent = seen[1]!.json.messages as {
      content: { tool_use_id?: string; content?: string }[];
    }[];
    const answer = sent.at(-1)!.content.find((b) => b.tool_use_id === "toolu_r9");
    expect(answer?.content?.length).toBeLessThanOrEqual(50_000);
  });
});
