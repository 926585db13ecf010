import { compact } from "../../core/compact.ts";
import type { OffloadStore } from "../../core/ports.ts";
import { recallMany } from "../../core/recall-many.ts";
import { RECALL_TOOL_NAME } from "../../core/recall-tool.ts";
import { turnOver } from "../../core/turn/over.ts";
import { MemoryStore } from "../../store/memory.ts";
import { REPLAY_EPOCH_MS } from "../gaps.ts";
import type { Policy } from "../policy.ts";
import type { Request } from "../types.ts";

/**
 * edge-offload itself: the real `compact` on every call (the client keeps sending its full history); a needed
 * body comes back through the real recall tool (`recallMany`, a query for the quote, answered at its default
 * size). One in-memory store for the whole run,
 * one tenant, a session per replayed session: what the adaptive gate learns carries over from session to
 * session, in file order, as it would in a deployment. The store's clock is the replay's timeline (the time
 * of each call), so turn gaps and idle times are the replayed ones; `coldCache: false` hides the idle time
 * from the transform, to measure what knowing the cold-cache moment is worth.
 */
export function edgeOffload(
  name: string,
  config: Record<string, unknown>,
  description: string,
  options: { coldCache?: boolean } = {},
): Policy {
  let clock = REPLAY_EPOCH_MS;
  const memory = new MemoryStore({ now: () => clock });
  const store: OffloadStore = options.coldCache === false ? withoutIdle(memory) : memory;
  return {
    name,
    description,
    start: (ctx) => {
      const session = {
        tenant: "replay",
        id: ctx.session.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128),
      };
      const memIds = new Map<string, string>();
      let recallDeclared = false;
      return {
        send: async (request, at) => {
          if (at !== undefined) clock = at;
          const out = await compact({ request: JSON.stringify(request), session, store, config });
          for (const d of out.decisions)
            if (d.mem_id !== null && d.action !== "kept") memIds.set(d.tool_use_id, d.mem_id);
          recallDeclared ||= out.report.recall_tool !== "none";
          return out.changed ? (JSON.parse(out.request as string) as Request) : request;
        },
        recover: async (id, quote) => {
          const memId = memIds.get(id);
          // The size-only path declares no recall tool: the model cannot read a shortened body back.
          if (memId === undefined || !recallDeclared) return null;
          const answer = await recallMany({ store, session, mem_id: memId, query: quote });
          const callId = `toolu_replay_recall_${id}`;
          return {
            call: {
              type: "tool_use",
              id: callId,
              name: RECALL_TOOL_NAME,
              input: { mem_id: memId, query: quote },
            },
            result: { type: "tool_result", tool_use_id: callId, content: answer.content },
          };
        },
      };
    },
  };
}

/** The store, except that a turn never says how long the session has been idle. */
function withoutIdle(store: MemoryStore): OffloadStore {
  return {
    beginTurn: async (ref, ask) =>
      turnOver(await store.beginTurn(ref, ask), { idle_seconds: null }),
    getBody: (ref, memId) => store.getBody(ref, memId),
    noteRecall: (ref, memId) => store.noteRecall(ref, memId),
    describeSession: (ref) => store.describeSession(ref),
    deleteSession: (ref) => store.deleteSession(ref),
  };
}
