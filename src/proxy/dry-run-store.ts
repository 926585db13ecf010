/**
 * A store that reads through to another and writes nothing, for a dry run of the turn transform: a
 * token count must compact the request exactly as the next real call would (the same sticky
 * records, the same session flags and learning statistics, hence the same decisions and bytes),
 * without recording a turn, ledgering a body or counting anything.
 *
 * The transform's decisions are deterministic given what it loads, so a commit here answers as a
 * first writer would: the decisions just made stand. A body is never put, so a stub of a fresh
 * decision names a mem_id that does not resolve yet; nothing reads it, since a counted request is
 * never sent to a model.
 */
import type { CommitResult, OffloadStore, TurnCommit } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";

export function dryRunStore(store: OffloadStore): OffloadStore {
  return {
    load: (ref, ids, names) => store.load(ref, ids, names),
    commit: async (_ref, commit: TurnCommit): Promise<CommitResult> => ({
      records: new Map(commit.records.map((r) => [r.tool_use_id, r])),
    }),
    putBody: async () => {},
    getBody: (ref, memId) => store.getBody(ref, memId),
    ...(store.hasBody === undefined
      ? {}
      : { hasBody: (ref: SessionRef, memId: string) => store.hasBody!(ref, memId) }),
    noteRecall: async () => {},
    describeSession: (ref) => store.describeSession(ref),
    deleteSession: async () => {},
    ...(store.getExtraction === undefined
      ? {}
      : { getExtraction: (tenant: string, key: string) => store.getExtraction!(tenant, key) }),
    putExtraction: async () => {},
  };
}
