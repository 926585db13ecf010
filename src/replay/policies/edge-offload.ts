import { compact } from "../../core/compact.ts";
import { SessionLengthLog, type SessionLengths } from "../../core/horizon.ts";
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
 * from the transform, to measure what knowing the cold-cache moment is worth. The store also supplies the
 * lengths of the sessions replayed before (file order), from which the gate learns its horizon.
 */
export function edgeOffload(
  name: string,
  config: Record<string, unknown>,
  description: string,
  options: { coldCache?: boolean } = {},
): Policy {
  let clock = REPLAY_EPOCH_MS;
  const memory = new MemoryStore({ now: () => clock });
  // The tenant's session lengths as a store would keep them: each session's calls, added once it has
  // ended (the next one starts), so a turn learns only from sessions before it in file order.
  const lengths = new SessionLengthLog();
  let calls = 0;
  const store = withTurnStart(memory, {
    idle: options.coldCache !== false,
    lengths: () => lengths.lengths(),
  });
  return {
    name,
    description,
    start: (ctx) => {
      lengths.add(calls);
      calls = 0;
      const session = {
        tenant: "replay",
        id: ctx.session.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128),
      };
      const memIds = new Map<string, string>();
      let recallDeclared = false;
      return {
        send: async (request, at) => {
          if (at !== undefined) clock = at;
          calls++;
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

/**
 * The store, with the turn-start data a deployment's store would add: the tenant's session lengths
 * (horizon.ts; the replay's own, online, in place of whatever the memory store has learned), and,
 * with `idle` false, no idle time (to measure what the cold-cache moment is worth).
 */
function withTurnStart(
  store: MemoryStore,
  opts: { idle: boolean; lengths: () => SessionLengths },
): OffloadStore {
  return {
    beginTurn: async (ref, ask) =>
      turnOver(await store.beginTurn(ref, ask), {
        ...(opts.idle ? {} : { idle_seconds: null }),
        session_lengths: opts.lengths(),
      }),
    getBody: (ref, memId) => store.getBody(ref, memId),
    noteRecall: (ref, memId) => store.noteRecall(ref, memId),
    describeSession: (ref) => store.describeSession(ref),
    deleteSession: (ref) => store.deleteSession(ref),
  };
}
