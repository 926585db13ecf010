/** The conversation the AI SDK tests send, as the AI SDK's messages. */
import type { ModelMessage } from "ai";
import { catalog } from "./providers.ts";

/** A conversation in the AI SDK's messages: the catalog (settled) and a small hot result. */
export function aiMessages(): ModelMessage[] {
  return [
    { role: "user", content: "Load the catalog and tell me the most expensive item." },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "toolu_1", toolName: "dump", input: {} }],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "toolu_1",
          toolName: "dump",
          output: { type: "text", value: catalog() },
        },
      ],
    },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "toolu_2", toolName: "status", input: {} }],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "toolu_2",
          toolName: "status",
          output: { type: "text", value: "ok" },
        },
      ],
    },
  ];
}
