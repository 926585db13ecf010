import { resolveConfig, type ToolRule } from "../../config.ts";
import { turnUsage } from "../../core/billing.ts";
import { type CompactOutput, compact } from "../../core/compact.ts";
import { SessionLengthLog, type SessionLengths } from "../../core/horizon.ts";
import type { OffloadStore } from "../../core/ports.ts";
import { recallMany } from "../../core/recall-many.ts";
import { RECALL_TOOL_NAME } from "../../core/recall-tool.ts";
import type { Decision } from "../../core/turn/context.ts";
import { turnOver } from "../../core/turn/over.ts";
import { describeRule, type ToolRuleCount } from "../../core/turn/tool-rules.ts";
import type { Action } from "../../core/types.ts";
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
  options: {
    coldCache?: boolean;
    /**
     * Sees each call's compact output (session id, 0-based client call: a kept hop's second call under
     * its call's index), to explain a session's cost.
     */
    observe?: (session: string, call: number, out: CompactOutput<string>) => void;
  } = {},
): Policy {
  let clock = REPLAY_EPOCH_MS;
  const memory = new MemoryStore({ now: () => clock });
  // The tenant's session lengths as a store would keep them: each session's calls, added once it has
  // ended (the next one starts), so a turn learns only from sessions before it in file order.
  const lengths = new SessionLengthLog();
  let calls = 0;
  const rules = new RuleTally(resolveConfig(config).tool_result_tool_rules);
  const store = withTurnStart(memory, {
    idle: options.coldCache !== false,
    lengths: () => lengths.lengths(),
  });
  return {
    name,
    description,
    toolRules: () => rules.counts(),
    start: (ctx) => {
      lengths.add(calls);
      calls = 0;
      rules.endSession();
      const session = {
        tenant: "replay",
        session: ctx.session.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128),
      };
      const memIds = new Map<string, string>();
      let recallDeclared = false;
      // The turn the last request sent belongs to, until its usage is told (a proxy hop's second call is
      // not a send: its usage is not the turn's own request, which is what calibrates).
      let unbilled: number | null = null;
      return {
        send: async (request, at, call) => {
          if (at !== undefined) clock = at;
          calls++;
          // As the proxy runs it: the betas the report names go out with the call.
          const out = await compact({
            request: JSON.stringify(request),
            session,
            store,
            config,
            sendsBetas: true,
          });
          options.observe?.(ctx.session, call ?? calls - 1, out);
          unbilled = out.report.turn;
          rules.note(out.decisions);
          for (const d of out.decisions)
            if (d.mem_id !== null && d.action !== "kept") memIds.set(d.tool_use_id, d.mem_id);
          recallDeclared ||= out.report.recall_tool !== "none";
          return out.changed ? (JSON.parse(out.request as string) as Request) : request;
        },
        billed: async (cost) => {
          if (unbilled === null) return;
          const turn = unbilled;
          unbilled = null;
          const usage = turnUsage(
            "anthropic",
            [
              {
                input_tokens: cost.input_tokens,
                cache_read_input_tokens: cost.read_tokens,
                cache_creation_input_tokens: cost.write_tokens,
                output_tokens: cost.output_tokens,
              },
            ],
            ctx.model,
            "client",
          );
          if (usage !== null) await memory.recordUsage(session, { turn }, usage);
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
 * What the config's tool rules did over a run, each tool result counted once: its decision on the last call
 * of its session that carried it.
 */
class RuleTally {
  readonly #rules: readonly ToolRule[];
  readonly #done: Map<string, ToolRuleCount>;
  #session = new Map<string, { rule: string; action: Action }>();

  constructor(rules: readonly ToolRule[]) {
    this.#rules = rules;
    this.#done = new Map();
  }

  note(decisions: readonly Decision[]): void {
    if (this.#rules.length === 0) return;
    for (const d of decisions)
      if (d.rule !== undefined)
        this.#session.set(d.tool_use_id, { rule: d.rule, action: d.action });
  }

  endSession(): void {
    for (const { rule, action } of this.#session.values()) {
      let c = this.#done.get(rule);
      if (c === undefined) {
        const r = this.#rules.find((x) => x.tool === rule)!;
        c = {
          tool: r.tool,
          says: describeRule(r),
          results: 0,
          kept: 0,
          compacted: 0,
          offloaded: 0,
        };
        this.#done.set(rule, c);
      }
      c.results++;
      c[action]++;
    }
    this.#session = new Map();
  }

  counts(): ToolRuleCount[] {
    this.endSession();
    return [...new Set(this.#rules.map((r) => r.tool))].flatMap((tool) => {
      const c = this.#done.get(tool);
      return c === undefined ? [] : [{ ...c }];
    });
  }
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
