/**
 * The proxy routes in /openapi.json (docs/proxy.md): the provider's request and answer, our two
 * headers.
 */
import { configHeader, ref } from "./openapi-parts.ts";

/** One path per provider API, all alike. */
export function proxyPaths(): Record<string, unknown> {
  const session = {
    name: "x-offload-session",
    in: "header",
    required: true,
    description: "The conversation: 1-128 chars of letters, digits and . _ : -.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
  };
  const op = (
    summary: string,
    upstream: string,
    what = "recall_tool_result calls are answered by the proxy",
  ) => ({
    post: {
      summary,
      description: `Forwarded to ${upstream} after compaction; ${what}. Errors (ours and the provider's) come in the provider's error shape; ours carry x-offload-error.`,
      security: [{ offloadKey: [] }],
      parameters: [session, configHeader],
      requestBody: {
        required: true,
        content: {
          "application/json": { schema: { type: "object", description: "The provider request." } },
        },
      },
      responses: {
        "200": {
          description: "The provider's answer (JSON, or an event stream when the request streams)",
          headers: {
            "x-offload-summary": {
              description: "One line of JSON (Summary, with its proxy field).",
              schema: ref("Summary"),
            },
          },
          content: {
            "application/json": { schema: { type: "object" } },
            "text/event-stream": { schema: { type: "string" } },
          },
        },
        default: {
          description:
            "An error in the provider's shape: the provider's own (status and body as sent), or ours (x-offload-error names its type; 502 when the provider could not be reached).",
        },
      },
    },
  });
  return {
    "/anthropic/v1/messages": op(
      "Anthropic Messages, through the proxy",
      "${ANTHROPIC_BASE_URL}/v1/messages",
    ),
    "/openai/v1/chat/completions": op(
      "OpenAI Chat Completions, through the proxy",
      "${OPENAI_BASE_URL}/chat/completions",
    ),
    "/openai/v1/responses": op(
      "OpenAI Responses, through the proxy",
      "${OPENAI_BASE_URL}/responses",
    ),
    "/anthropic/v1/messages/count_tokens": op(
      "Anthropic token count of the request as the next call will send it",
      "${ANTHROPIC_BASE_URL}/v1/messages/count_tokens",
      "compacted exactly as the next call of the session will be, but nothing is recorded",
    ),
    "/openai/v1/responses/input_tokens": op(
      "OpenAI Responses input token count of the request as the next call will send it",
      "${OPENAI_BASE_URL}/responses/input_tokens",
      "compacted exactly as the next call of the session will be, but nothing is recorded",
    ),
  };
}
