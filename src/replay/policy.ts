/**
 * A context policy as the replay drives it: per call it gets the request the client would send (full history,
 * the client's own cache markers) and returns the request actually sent. When a later message needs text a
 * policy removed, `recover` gives the tool call and answer of one extra model call that fetches it, or null
 * when the policy has no way back (a lost reference).
 */
import type { ToolRuleCount } from "../core/turn/tool-rules.ts";
import type { Block, CallCost, Client, Request } from "./types.ts";

export interface PolicyContext {
  model: string;
  client: Client;
  session: string;
}

export interface Recovery {
  /** The assistant tool_use block of the extra call, and the tool_result block that answers it. */
  call: Block;
  result: Block;
}

export interface PolicyRun {
  /**
   * `at`: when the call is made (epoch ms), when the replay has a timeline; `call`: the session's client
   * call it belongs to (0-based; a kept hop's second call sends again under the same index).
   */
  send(request: Request, at?: number, call?: number): Promise<Request>;
  recover(sourceToolUseId: string, quote: string): Promise<Recovery | null>;
  /**
   * What the request just sent was billed (the replay's cache simulation as the provider's usage), unless
   * the replay runs with `usage: false` (`--no-usage`): the policy hears it as a deployment does from the
   * answers or the usage route.
   */
  billed?(cost: CallCost): Promise<void>;
}

export interface Policy {
  readonly name: string;
  readonly description: string;
  start(ctx: PolicyContext): PolicyRun;
  /**
   * What each of the policy's tool rules did over the run, counted once per tool result (its decision on
   * the last call that carried it); absent for policies without rules.
   */
  toolRules?(): ToolRuleCount[];
}

/** Tool results of a request, by tool_use_id (some logs reuse an id: every block under it, in order). */
export function resultsOf(request: Request): Map<string, Block[]> {
  const out = new Map<string, Block[]>();
  for (const m of request.messages) {
    if (m.role !== "user" || typeof m.content === "string") continue;
    for (const b of m.content)
      if (b.type === "tool_result" && typeof b.tool_use_id === "string")
        out.set(b.tool_use_id, [...(out.get(b.tool_use_id) ?? []), b]);
  }
  return out;
}

/** A copy of the request where each tool result's content is replaced by `replace` (or kept when it returns undefined). */
export function mapResults(
  request: Request,
  replace: (block: Block, index: number, total: number) => unknown,
): Request {
  const total = request.messages.reduce(
    (n, m) =>
      n +
      (typeof m.content === "string"
        ? 0
        : m.content.filter((b) => b.type === "tool_result").length),
    0,
  );
  let index = 0;
  return {
    ...request,
    messages: request.messages.map((m) => {
      if (
        m.role !== "user" ||
        typeof m.content === "string" ||
        !m.content.some((b) => b.type === "tool_result")
      )
        return m;
      let changed = false;
      const content = m.content.map((b) => {
        if (b.type !== "tool_result") return b;
        const next = replace(b, index++, total);
        if (next === undefined) return b;
        changed = true;
        return { ...b, content: next };
      });
      return changed ? { ...m, content } : m;
    }),
  };
}
