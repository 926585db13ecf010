/**
 * The Agents example inside workerd (the vitest plugin, examples/agent-chat/wrangler.toml): a real
 * SQLite-backed `AIChatAgent` object whose model calls go through the AI SDK middleware, with the provider
 * faked at the outbound fetch. Also the agent store's contracts, run inside that same kind of object (beside
 * the agent's own tables).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { getAgentByName } from "agents";
import type { UIMessage } from "ai";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ChatAgent } from "../../examples/agent-chat/src/agent.ts";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { AgentStore } from "../../src/store/agent.ts";
import { type DurableStorage, durableSql } from "../../src/store/sql.ts";
import { SqlIndex } from "../../src/store/sql-index.ts";
import { type BodyBucket, SqlLedger } from "../../src/store/sql-ledger.ts";
import { SqlSessionState } from "../../src/store/sql-session.ts";
import { SqlTenantLearning } from "../../src/store/sql-tenant.ts";
import { anthropicEvents, anthropicMessage, memIdIn, RECALL_NAME } from "../support/providers.ts";
import { clocked, clockHooks } from "../support/records.ts";
import { mockProvider, type Seen, sseReply } from "../worker/proxy-mock.ts";

interface AgentEnv {
  ChatAgent: DurableObjectNamespace<ChatAgent>;
  BODIES: BodyBucket;
}
const agentEnv = env as unknown as AgentEnv;

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A port whose every call runs inside one ChatAgent object, over its own storage (what the adapters get
 * from `this.ctx.storage` in an agent). What a call returns that has methods of its own (a turn) runs its
 * calls there too.
 */
function inAgent<T extends object>(make: (storage: DurableStorage) => T, name = "contracts"): T {
  const stub = agentEnv.ChatAgent.get(agentEnv.ChatAgent.idFromName(name));
  const inside = (run: (storage: DurableStorage) => unknown) =>
    runInDurableObject(stub, async (_agent, state) =>
      handle(await run(state.storage as unknown as DurableStorage)),
    );
  /** A class instance (a turn) stays in the object: its methods are called there. */
  const handle = (value: unknown): unknown => {
    if (typeof value !== "object" || value === null) return value;
    const proto = Object.getPrototypeOf(value) as object | null;
    if (
      proto === Object.prototype ||
      proto === null ||
      value instanceof Map ||
      Array.isArray(value)
    )
      return value;
    return new Proxy(value, {
      get: (target, prop) => {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== "function") return v;
        return (...args: unknown[]) =>
          inside(() => (v as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
  };
  return new Proxy({} as T, {
    // Not a thenable: the contracts `await` what their factory returns.
    get: (_target, method: string) =>
      method === "then"
        ? undefined
        : (...args: unknown[]) =>
            inside((storage) =>
              (make(storage) as Record<string, (...a: unknown[]) => unknown>)[method]!(...args),
            ),
  });
}

runSessionStateContract(
  "SqlSessionState (an agent's SQLite)",
  () =>
    clocked((now) =>
      inAgent((s) => new SqlSessionState(durableSql(s), { retentionSeconds: 0, now })),
    ),
  clockHooks,
);
runLedgerContract("SqlLedger (an agent's SQLite)", () =>
  inAgent((s) => new SqlLedger(durableSql(s))),
);
runLedgerContract("SqlLedger (an agent's SQLite + R2)", () =>
  inAgent((s) => new SqlLedger(durableSql(s), { bucket: agentEnv.BODIES, inlineMaxChars: 100 })),
);
runIndexContract("SqlIndex (an agent's SQLite)", () => inAgent((s) => new SqlIndex(durableSql(s))));
runTenantLearningContract("SqlTenantLearning (an agent's SQLite)", () =>
  inAgent((s) => new SqlTenantLearning(durableSql(s))),
);
runStoreContract("AgentStore (an agent's SQLite + R2)", () =>
  inAgent((s) => new AgentStore(s, { bucket: agentEnv.BODIES, log: () => {} })),
);

let n = 0;
const user = (text: string): UIMessage => ({
  id: `u${++n}`,
  role: "user",
  parts: [{ type: "text", text }],
});

function stream(...parts: Parameters<typeof anthropicMessage>[1]) {
  return sseReply(
    anthropicEvents(anthropicMessage(`msg_${++n}`, parts, { input: 900, output: 20 })),
  );
}

/** The inventory result's content as the provider received it. */
function inventoryResult(seen: Seen): string {
  for (const m of seen.json.messages as { content: unknown }[])
    if (Array.isArray(m.content))
      for (const b of m.content as { type: string; tool_use_id?: string; content?: string }[])
        if (b.type === "tool_result" && b.tool_use_id === "toolu_inv") return b.content!;
  throw new Error("no inventory result");
}

let stubSent = "";

/** The conversation's object, named as the Agents SDK names it. */
async function agentNamed(name: string): Promise<DurableObjectStub<ChatAgent>> {
  return (await getAgentByName(
    agentEnv.ChatAgent,
    name,
  )) as unknown as DurableObjectStub<ChatAgent>;
}

describe("the example agent (AIChatAgent + offloadMiddleware + AgentStore)", () => {
  it("parks the inventory export in its own object, answers the model's recall itself, and the chat never sees our tool", async () => {
    const seen: Seen[] = mockProvider(
      stream({ call: "inventory", id: "toolu_inv", input: { warehouse: "A" } }),
      stream({ call: "reorder", id: "toolu_re", input: { sku: "SKU-00013", quantity: 100 } }),
      (s) =>
        stream({
          call: RECALL_NAME,
          id: "toolu_rc",
          input: { mem_id: memIdIn(s.body), query: "SKU-01999" },
        }),
      stream({ text: "Reordered SKU-00013; SKU-01999 has 103 in stock." }),
    );
    const agent = await agentNamed("chat-1");
    const messages = await runInDurableObject(agent, async (instance: ChatAgent) => {
      const result = await instance.saveMessages([user("What is low in warehouse A?")]);
      expect(result.status).toBe("completed");
      return instance.messages;
    });
    const last = messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(JSON.stringify(messages)).not.toContain(RECALL_NAME);
    expect(
      last.parts
        .filter((p) => p.type === "text")
        .map((p) => (p as { text: string }).text)
        .join(""),
    ).toBe("Reordered SKU-00013; SKU-01999 has 103 in stock.");
    expect(seen).toHaveLength(4);
    // The export is stubbed on the call it arrives (first delivery, a default) and stays so; our tool
    // goes last; the hop carries the recalled slice.
    expect(seen[1]!.body).not.toContain("part 1999");
    expect(seen[2]!.body).not.toContain("part 1999");
    stubSent = inventoryResult(seen[2]!);
    expect(stubSent).toContain("trm_");
    expect(inventoryResult(seen[1]!)).toBe(stubSent);
    expect((seen[2]!.json.tools as { name: string }[]).at(-1)!.name).toBe(RECALL_NAME);
    expect(seen[3]!.body).toContain("SKU-01999");
    const reports = await agent.lastReports();
    expect(reports.map((r) => r.summary.offloaded)).toEqual([0, 1, 1]);
    expect(reports[2]!.summary.proxy).toMatchObject({ stream: true, hops: 1, recalls: 1 });
    // The body is in the agent's own SQLite, beside the agent's tables.
    const rows = await runInDurableObject(agent, (_i, state) =>
      state.storage.sql.exec("SELECT mem_id FROM eo_bodies").toArray(),
    );
    expect(rows).toHaveLength(1);
  });

  it("a later turn sends the export as the same stub bytes (sticky), without a new offload", async () => {
    const agent = await agentNamed("chat-1");
    const seen = mockProvider(stream({ text: "Nothing else is low." }));
    await runInDurableObject(agent, (instance: ChatAgent) =>
      instance.saveMessages((m) => [...m, user("Anything else?")]),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.body).not.toContain("part 1999");
    expect(inventoryResult(seen[0]!)).toBe(stubSent);
    const reports = await agent.lastReports();
    expect(reports.at(-1)!.summary).toMatchObject({ offloaded: 1, new_decisions: 0 });
  });

  it("a provider error ends the turn with the error, as without the middleware", async () => {
    const agent = await agentNamed("chat-2");
    mockProvider(
      () =>
        new Response(
          JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "busy" } }),
          {
            status: 529,
            headers: { "content-type": "application/json" },
          },
        ),
    );
    const result = await runInDurableObject(agent, (instance: ChatAgent) =>
      instance.saveMessages([user("hello")]),
    );
    expect(result.status).toBe("error");
  });
});
