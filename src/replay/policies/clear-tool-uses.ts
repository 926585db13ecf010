import { BlockCache } from "../blocks.ts";
import { mapResults, type Policy } from "../policy.ts";

/**
 * Anthropic's server-side context editing, `clear_tool_uses_20250919` with its defaults: when a request's
 * input exceeds 100,000 tokens, every tool result but the 3 most recent is replaced by placeholder text
 * (inputs kept, no `clear_at_least`). Applied to each request afresh, as the API does: the cleared set moves
 * with the conversation.
 */
export function clearToolUses(triggerTokens = 100_000, keep = 3): Policy {
  return {
    name: "clear-tool-uses",
    description: `Anthropic clear_tool_uses defaults: over ${triggerTokens / 1000}K input tokens, clear all but the last ${keep} results`,
    start: () => {
      const blocks = new BlockCache();
      return {
        send: async (request) => {
          const tokens = blocks.blocksOf(request).reduce((n, b) => n + b.tokens, 0);
          if (tokens <= triggerTokens) return request;
          return mapResults(request, (_b, i, total) =>
            i < total - keep ? "[cleared by context management]" : undefined,
          );
        },
        recover: async () => null,
      };
    },
  };
}
