/**
 * A turn that reads through to another and writes nothing, for a dry run of the turn transform: a
 * token count must compact the request exactly as the next real call would (the same sticky
 * records, the same session flags and learning statistics, hence the same decisions and bytes),
 * without recording a turn, ledgering a body or counting anything.
 *
 * The transform's decisions are deterministic given what it reads, so a commit here answers as a
 * first writer would: the decisions just made stand. A body is never put, so a stub of a fresh
 * decision names a mem_id that does not resolve yet; nothing reads it, since a counted request is
 * never sent to a model.
 */
import type { Turn } from "../core/ports.ts";
import { turnOver } from "../core/turn/over.ts";

export function dryRunTurn(turn: Turn): Turn {
  const cache = turn.extractions;
  return turnOver(turn, {
    putBody: async () => {},
    commit: async (commit) => ({
      records: new Map(commit.records.map((r) => [r.tool_use_id, r])),
    }),
    finish: async () => {},
    extractions:
      cache === undefined
        ? undefined
        : {
            getExtraction: (tenant, key) => cache.getExtraction(tenant, key),
            putExtraction: async () => {},
          },
  });
}
