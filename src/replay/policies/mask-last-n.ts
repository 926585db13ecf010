import { countLines } from "../../core/text.ts";
import { textOfResult } from "../blocks.ts";
import { mapResults, type Policy } from "../policy.ts";

/**
 * SWE-agent's observation masking: every tool result but the last `keep` is replaced by a one-line
 * placeholder. The mask moves with every new result, so the cached prefix breaks at the result that just
 * left the window, on every turn.
 */
export function maskLastN(keep = 10): Policy {
  return {
    name: `mask-last-${keep}`,
    description: `SWE-agent observation masking: results older than the last ${keep} become a placeholder`,
    start: () => ({
      send: async (request) =>
        mapResults(request, (b, i, total) =>
          i < total - keep
            ? `Old environment output: (${countLines(textOfResult(b.content))} lines omitted)`
            : undefined,
        ),
      recover: async () => null,
    }),
  };
}
