/**
 * The Vercel AI SDK's `pruneMessages` (the real function from the `ai` package, loaded when installed), with
 * the settings its docs show for agents: reasoning before the last message and tool calls before the last 2
 * messages removed, empty messages dropped. Anthropic messages are converted to the SDK's ModelMessage and
 * back; a pruned tool call takes its result with it (both are gone, nothing to recall).
 */
import type { Policy } from "../policy.ts";
import type { Block, Message, Request } from "../types.ts";

type Part = { type: string; [k: string]: unknown };
type ModelMessage = { role: "user" | "assistant" | "tool"; content: string | Part[] };
type Prune = (args: {
  messages: ModelMessage[];
  reasoning?: string;
  toolCalls?: string;
  emptyMessages?: string;
}) => ModelMessage[];

let loaded: Prune | null | undefined;

export async function loadPruneMessages(): Promise<Prune | null> {
  if (loaded === undefined) {
    try {
      const mod = (await import("ai")) as unknown as { pruneMessages?: Prune };
      loaded = typeof mod.pruneMessages === "function" ? mod.pruneMessages : null;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

function toModel(messages: Message[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const m of messages) {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === "assistant") {
      out.push({
        role: "assistant",
        content: m.content.map(
          (b): Part =>
            b.type === "tool_use"
              ? {
                  type: "tool-call",
                  toolCallId: b.id,
                  toolName: b.name,
                  input: b.input,
                  anthropic: b,
                }
              : { type: "text", text: b.text ?? "", anthropic: b },
        ),
      });
      continue;
    }
    const results = m.content.filter((b) => b.type === "tool_result");
    const others = m.content.filter((b) => b.type !== "tool_result");
    if (results.length > 0) {
      out.push({
        role: "tool",
        content: results.map(
          (b): Part => ({
            type: "tool-result",
            toolCallId: b.tool_use_id,
            toolName: "tool",
            output: { type: "text", value: "" },
            anthropic: b,
          }),
        ),
      });
    }
    if (others.length > 0)
      out.push({
        role: "user",
        content: others.map(
          (b): Part => ({ type: "text", text: String(b.text ?? ""), anthropic: b }),
        ),
      });
  }
  return out;
}

function fromModel(messages: ModelMessage[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    const role = m.role === "assistant" ? "assistant" : "user";
    const content: string | Block[] =
      typeof m.content === "string" ? m.content : m.content.map((p) => p.anthropic as Block);
    const last = out[out.length - 1];
    // Anthropic merges consecutive same-role turns; keep them merged so the request stays well formed.
    if (
      last !== undefined &&
      last.role === role &&
      typeof last.content !== "string" &&
      typeof content !== "string"
    )
      last.content = [...last.content, ...content];
    else out.push({ role, content });
  }
  return out;
}

export function pruneMessagesPolicy(): Policy {
  return {
    name: "prune-messages",
    description: "Vercel AI SDK pruneMessages: tool calls before the last 2 messages removed",
    start: () => ({
      send: async (request: Request) => {
        const prune = await loadPruneMessages();
        if (prune === null)
          throw new Error('the prune-messages policy needs the "ai" package (npm i ai)');
        const pruned = prune({
          messages: toModel(request.messages),
          reasoning: "before-last-message",
          toolCalls: "before-last-2-messages",
          emptyMessages: "remove",
        });
        return { ...request, messages: fromModel(pruned) };
      },
      recover: async () => null,
    }),
  };
}
