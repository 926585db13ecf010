import { textOfResult } from "../blocks.ts";
import { mapResults, type Policy } from "../policy.ts";

const WINDOW = 300;

/**
 * deepagents-style eviction: a result over `tokenLimit` tokens (chars/4, as deepagents estimates) is written
 * to a file at its first delivery and replaced, from then on, by a head/tail preview (5 lines each) and the
 * file's path. The model can read the file back with read_file (a recall hop, priced like ours).
 */
export function evict(tokenLimit = 20_000): Policy {
  const limitChars = tokenLimit * 4;
  const preview = (id: string, body: string): string => {
    const lines = body.split("\n");
    const cap = (l: string) => (l.length > 1000 ? `${l.slice(0, 1000)}…` : l);
    const head = lines.slice(0, 5).map(cap).join("\n");
    const tail = lines.length > 10 ? lines.slice(-5).map(cap).join("\n") : "";
    return [
      `Tool result too large, saved to: /large_tool_results/${id}`,
      `Read the result using read_file with offset and limit parameters.`,
      `Example: read_file(path="/large_tool_results/${id}", offset=0, limit=100)`,
      "",
      "Preview (head/tail):",
      "",
      head,
      ...(tail ? ["", `... [${lines.length - 10} lines truncated] ...`, "", tail] : []),
    ].join("\n");
  };
  return {
    name: `evict-${tokenLimit / 1000}k`,
    description: `deepagents eviction: results over ${tokenLimit / 1000}K tokens go to a file at first delivery, head/tail preview kept`,
    start: () => {
      const files = new Map<string, string>();
      return {
        send: async (request) =>
          mapResults(request, (b) => {
            const body = textOfResult(b.content);
            if (body.length <= limitChars) return undefined;
            const id = String(b.tool_use_id);
            files.set(id, body);
            return preview(id, body);
          }),
        recover: async (id, quote) => {
          const body = files.get(id);
          if (body === undefined) return null;
          const at = Math.max(0, body.indexOf(quote));
          const slice = body.slice(Math.max(0, at - WINDOW), at + quote.length + WINDOW);
          const callId = `toolu_replay_read_${id}`;
          return {
            call: {
              type: "tool_use",
              id: callId,
              name: "read_file",
              input: { path: `/large_tool_results/${id}`, offset: at, limit: slice.length },
            },
            result: { type: "tool_result", tool_use_id: callId, content: slice },
          };
        },
      };
    },
  };
}
