/** Builders for Anthropic Messages requests used across tests (plain data, no I/O). */
import type { CachedExtraction, OffloadStore } from "../../src/core/ports.ts";
import { turnOver } from "../../src/core/turn/over.ts";

export type Block = Record<string, unknown>;
export type Message = { role: "user" | "assistant"; content: string | Block[] };

export interface Turn {
  /** tool_use id */
  id: string;
  name?: string;
  input?: Record<string, unknown>;
  /** the tool result's content (string or blocks) */
  result: string | Block[];
  is_error?: boolean;
}

/**
 * A conversation: a task, then per turn an assistant tool_use and the user's tool_result. `answered` adds a
 * final assistant text, which settles the last result too.
 */
export function conversation(
  turns: Turn[],
  opts: {
    model?: string;
    answered?: boolean;
    tools?: Block[] | null;
    system?: unknown;
    extra?: Record<string, unknown>;
  } = {},
): Record<string, unknown> {
  const messages: Message[] = [{ role: "user", content: "Do the task." }];
  for (const t of turns) {
    messages.push({
      role: "assistant",
      content: [
        { type: "text", text: `calling ${t.name ?? "bash"}` },
        { type: "tool_use", id: t.id, name: t.name ?? "bash", input: t.input ?? { cmd: t.id } },
      ],
    });
    messages.push({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: t.id,
          content: t.result,
          ...(t.is_error === undefined ? {} : { is_error: t.is_error }),
        },
      ],
    });
  }
  if (opts.answered)
    messages.push({ role: "assistant", content: [{ type: "text", text: "done" }] });
  const req: Record<string, unknown> = { model: opts.model ?? "claude-opus-4-5", max_tokens: 1024 };
  if (opts.system !== undefined) req.system = opts.system;
  if (opts.tools !== null)
    req.tools = opts.tools ?? [
      {
        name: "bash",
        description: "run a command",
        input_schema: { type: "object", properties: { cmd: { type: "string" } } },
      },
    ];
  req.messages = messages;
  return { ...req, ...(opts.extra ?? {}) };
}

/** A JSON body of about `chars` characters (deterministic). */
export function jsonBody(chars: number): string {
  const items: unknown[] = [];
  let size = 20;
  for (let i = 0; size < chars; i++) {
    const item = {
      id: i,
      sku: `SKU-${String(i).padStart(6, "0")}`,
      name: `Item number ${i}`,
      price: ((i * 7) % 1000) / 10,
      tags: ["a", "b"],
    };
    size += JSON.stringify(item).length + 1;
    items.push(item);
  }
  return JSON.stringify({ total: items.length, items });
}

/** A text body of exactly `chars` characters, lines of log-ish text. */
export function textBody(chars: number, seed = "line"): string {
  let out = "";
  for (let i = 0; out.length < chars; i++)
    out += `${seed} ${i}: the quick brown fox jumps over the lazy dog\n`;
  return out.slice(0, chars);
}

export const ON = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
} as const;
export const SIZE_ONLY = { tool_result_compaction_enabled: true } as const;

/** A store whose every method throws: proves a code path never touches storage. */
export function untouchableStore(): OffloadStore & { calls: string[] } {
  const calls: string[] = [];
  const fail = (name: string) => async () => {
    calls.push(name);
    throw new Error(`store.${name} must not be called`);
  };
  return {
    calls,
    beginTurn: fail("beginTurn"),
    getBody: fail("getBody"),
    noteRecall: fail("noteRecall"),
    describeSession: fail("describeSession"),
    deleteSession: fail("deleteSession"),
  };
}

/** What a fault may be injected into: the store's begin, a turn's writes, the recall path. */
export type Fault =
  | "beginTurn"
  | "read"
  | "putBody"
  | "commit"
  | "finish"
  | "getBody"
  | "hasBody"
  | "noteRecall";

/** Wrap a store so chosen methods (the store's, or its turns') fail (storage fault injection). */
export function faultyStore(
  inner: OffloadStore,
  failing: Partial<Record<Fault, boolean>>,
): OffloadStore {
  const fault = (name: Fault) => async () => Promise.reject(new Error(`injected ${name} fault`));
  const turnFaults = (
    ["read", "putBody", "commit", "finish", "getBody", "hasBody"] as const
  ).filter((f) => failing[f] === true);
  return {
    beginTurn: failing.beginTurn
      ? fault("beginTurn")
      : async (ref, ask) =>
          turnOver(
            await inner.beginTurn(ref, ask),
            Object.fromEntries(turnFaults.map((f) => [f, fault(f)])),
          ),
    getBody: failing.getBody ? fault("getBody") : (ref, memId) => inner.getBody(ref, memId),
    noteRecall: failing.noteRecall
      ? fault("noteRecall")
      : (ref, memId) => inner.noteRecall(ref, memId),
    describeSession: (ref) => inner.describeSession(ref),
    deleteSession: (ref) => inner.deleteSession(ref),
    ...(inner.getExtraction === undefined
      ? {}
      : {
          getExtraction: (t: string, k: string) => inner.getExtraction!(t, k),
          putExtraction: (t: string, k: string, v: CachedExtraction) =>
            inner.putExtraction!(t, k, v),
        }),
  };
}

/** Deep-freeze a value (to prove the core never mutates its input). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
