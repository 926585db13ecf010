// Shared by the HTTP tests: calling the Worker, and Anthropic conversations with one large tool result.
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { SummarySchema } from "../../src/routes/schemas/summary.ts";
import type { SessionState } from "../../src/store/ports.ts";

export const BASE = "https://edge-offload.test";
export const KEYS = { acme: "test-key-acme-0001", globex: "test-key-globex-0001" } as const;
export const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

let n = 0;
export function sid(prefix: string): string {
  n++;
  return `${prefix}-${Date.now().toString(36)}-${n}`;
}

export interface CallInit {
  method?: string;
  body?: BodyInit | object | null;
  key?: string | null;
  headers?: Record<string, string>;
  config?: object;
}

export function request(path: string, init: CallInit = {}): Request {
  const headers: Record<string, string> = { ...init.headers };
  const key = init.key === undefined ? KEYS.acme : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (init.config !== undefined) headers["x-offload-config"] = JSON.stringify(init.config);
  let body: BodyInit | null = null;
  if (init.body !== undefined && init.body !== null) {
    const raw = init.body;
    body =
      typeof raw === "string" ||
      raw instanceof Uint8Array ||
      raw instanceof ReadableStream ||
      raw instanceof ArrayBuffer
        ? (raw as BodyInit)
        : JSON.stringify(raw);
    headers["content-type"] ??= "application/json";
  }
  return new Request(`${BASE}${path}`, {
    method: init.method ?? (body === null ? "GET" : "POST"),
    headers,
    body,
  });
}

export function call(path: string, init: CallInit = {}): Promise<Response> {
  return SELF.fetch(request(path, init));
}

export async function expectError(
  res: Response,
  status: number,
  type: string,
  path?: string,
): Promise<{ error: { type: string; message: string; path?: string } }> {
  const body = (await res.json()) as { error: { type: string; message: string; path?: string } };
  expect({ status: res.status, type: body.error.type, keys: Object.keys(body).join() }).toEqual({
    status,
    type,
    keys: "error",
  });
  expect(typeof body.error.message).toBe("string");
  if (path !== undefined) expect(body.error.path).toBe(path);
  return body;
}

export function summary(res: Response) {
  const header = res.headers.get("x-offload-summary");
  expect(header).not.toBeNull();
  expect(/^[\x20-\x7e]*$/.test(header!)).toBe(true);
  return SummarySchema.parse(JSON.parse(header!));
}

/** ~75K chars of JSON: over the 60K offload threshold, and addressable with json_path. */
export function catalog(items = 1500): string {
  return JSON.stringify({
    items: Array.from({ length: items }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
  });
}

type Message = { role: "user" | "assistant"; content: unknown };
export interface Conversation {
  model: string;
  max_tokens: number;
  tools: unknown[];
  messages: Message[];
}

/** Turn 1: a large settled result (toolu_1) and a fresh small one (toolu_2, hot). */
export function conversation(big = catalog()): Conversation {
  return {
    model: "claude-opus-4-5",
    max_tokens: 1024,
    tools: [
      {
        name: "dump",
        description: "Dump the catalog",
        input_schema: { type: "object", properties: {} },
      },
    ],
    messages: [
      { role: "user", content: "Load the catalog and tell me the most expensive item." },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "dump", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: big }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Loaded. Checking the status too." },
          { type: "tool_use", id: "toolu_2", name: "status", input: {} },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }] },
    ],
  };
}

/** The next turn: one more call and its result appended (to whatever history the client holds). */
export function nextTurn(
  history: Conversation,
  k: number,
  result = `step ${k} done`,
): Conversation {
  return {
    ...history,
    messages: [
      ...history.messages,
      {
        role: "assistant",
        content: [{ type: "tool_use", id: `toolu_${k}`, name: "step", input: { k } }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `toolu_${k}`, content: result }],
      },
    ],
  };
}

export function compactPath(session: string, format = "anthropic"): string {
  return `/v1/sessions/${session}/compact?format=${format}`;
}

export function memIdIn(text: string): string {
  const m = /trm_[0-9a-f]{24}/.exec(text);
  expect(m).not.toBeNull();
  return m![0];
}

/** A port object whose methods keep their `this` when spread. */
export function bound(port: SessionState): SessionState {
  return {
    begin: (...a) => port.begin(...a),
    records: (...a) => port.records(...a),
    addRecords: (...a) => port.addRecords(...a),
    commit: (...a) => port.commit(...a),
    finish: (...a) => port.finish(...a),
    noteRecall: (...a) => port.noteRecall(...a),
    recordUsage: (...a) => port.recordUsage(...a),
    describe: (...a) => port.describe(...a),
    report: (...a) => port.report(...a),
    getConfig: (...a) => port.getConfig(...a),
    setConfig: (...a) => port.setConfig(...a),
    destroy: (...a) => port.destroy(...a),
    purged: (...a) => port.purged(...a),
    end: (...a) => port.end(...a),
  };
}
