/**
 * A scripted model behind a fake Anthropic + OpenAI on 127.0.0.1, for the real-agent tests. It answers from
 * the conversation it is sent, not from a queue, so an agent's own retries and side calls get sensible
 * answers. The task it plays, the same for both agents:
 *
 * 1. "read the catalog": Claude Code's Read on a large file / Codex's `exec` printing it (a large result);
 * 2. "read the notes": a small second read, so the catalog result is settled (the proxy offloads it);
 * 3. the catalog now reaches the model as a stub: it calls `recall_tool_result` with the stub's mem_id and
 *    an exact query (the proxy answers that call in a hop the agent never sees);
 * 4. with the recall answer, it states the price it read there and ends the turn;
 * 5. a follow-up prompt (the continued session) is answered with text.
 *
 * A phase whose precondition fails (no stub where one is due, no recall answer) is answered with a text that
 * starts "FAKE-MODEL:" and says what was wrong, so the agent finishes and the test names the problem.
 * The purpose of each call is carried in its id (`toolu_catalog_3`), which the agents echo back.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Incoming,
  type LocalServer,
  listenLocal,
  writeEvents,
} from "../support/local-server.ts";
import {
  anthropicEvents,
  anthropicMessage,
  type Part,
  RECALL_NAME,
  response,
  responseEvents,
} from "../support/providers.ts";

export interface Received extends Incoming {
  /** What the fake decided for it ("catalog", "notes", "recall", "answer", "follow-up", "side", "fail"…). */
  phase: string;
}

/** The catalog the task reads: ~82 KB of lines, each line findable by an exact query. */
export const CATALOG_LINES = 1500;
export function catalogLine(i: number): string {
  const id = String(i).padStart(4, "0");
  return `item-${id} price=${(i * 1.5).toFixed(2)} sku=SKU-${id}-${((i * 7919) % 100_000).toString(36).padStart(4, "0")} stock=${(i * 37) % 500}`;
}
export function catalogText(): string {
  return Array.from({ length: CATALOG_LINES }, (_, i) => catalogLine(i)).join("\n");
}
/** The item the model asks the proxy about, and what it must find. */
export const ASKED = 1234;
export const ASKED_PRICE = (ASKED * 1.5).toFixed(2);
export const FOLLOW_UP = "follow-up: say done";

const STUB_MEM_ID = /trm_[0-9a-f]{24}/;
const MODEL_MARK = "FAKE-MODEL:";

/** A failure the fake plays once, at the start of a phase (to test that an agent's own retry recovers). */
export type Failure = { phase: string; status: number };

export class FakeModel {
  readonly received: Received[] = [];
  url = "";
  #server: LocalServer | undefined;
  #failures: Failure[] = [];
  #ids = 0;

  /** The next request in `phase` is answered with `status` (once). */
  failOnce(failure: Failure): void {
    this.#failures.push(failure);
  }

  /** Failures scripted but not played yet. */
  pendingFailures(): Failure[] {
    return [...this.#failures];
  }

  since(from: number): Received[] {
    return this.received.slice(from);
  }

  async start(): Promise<string> {
    this.#server = await listenLocal((incoming, res) => {
      const r: Received = { ...incoming, phase: "" };
      this.received.push(r);
      const answer = this.#answer(r);
      const dump = process.env.EDGE_OFFLOAD_AGENTS_DUMP;
      if (dump !== undefined && dump !== "")
        writeFileSync(
          join(dump, `${String(this.received.length).padStart(3, "0")}-${r.phase}.json`),
          JSON.stringify({ ...r, answer }, null, 1),
        );
      res.writeHead(answer.status, answer.headers);
      if (typeof answer.body === "string") res.end(answer.body);
      else void writeEvents(res, answer.body);
    });
    this.url = this.#server.url;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.#server?.stop();
  }

  #id(prefix: string, purpose: string): string {
    this.#ids++;
    return `${prefix}_${purpose}_${this.#ids}`;
  }

  #answer(r: Received): {
    status: number;
    headers: Record<string, string>;
    body: string | string[];
  } {
    const path = r.path.split("?")[0]!;
    const json = (status: number, value: unknown) => ({
      status,
      headers: { "content-type": "application/json", "request-id": `req_${this.received.length}` },
      body: JSON.stringify(value),
    });
    if (r.method === "GET" && path.endsWith("/models")) {
      r.phase = "models";
      return json(200, { data: [], has_more: false, first_id: null, last_id: null });
    }
    if (r.method === "POST" && path === "/anthropic/v1/messages/count_tokens") {
      r.phase = "count_tokens";
      return json(200, { input_tokens: Math.ceil(r.body.length / 4) });
    }
    // A scripted failure of the phase, in the provider's error shape.
    const failed = (phase: string, error: (message: string) => unknown) => {
      r.phase = phase;
      const failure = this.#takeFailure(phase);
      if (failure === undefined) return undefined;
      r.phase = `fail:${phase}`;
      return json(failure.status, error("fake provider: scripted failure"));
    };
    if (r.method === "POST" && path === "/anthropic/v1/messages") {
      const decided = this.#anthropic(r.json);
      const failure = failed(decided.phase, (message) => ({
        type: "error",
        error: { type: "api_error", message },
      }));
      if (failure !== undefined) return failure;
      const message = anthropicMessage(this.#id("msg", "fake"), decided.parts, {
        input: Math.ceil(r.body.length / 4),
        output: 20,
      });
      message.model = r.json.model ?? "unknown";
      if (r.json.stream !== true) return json(200, message);
      return { status: 200, headers: sseHeaders(), body: anthropicEvents(message) };
    }
    if (r.method === "POST" && path === "/openai/v1/responses") {
      const decided = this.#responses(r.json);
      const failure = failed(decided.phase, (message) => ({
        error: { type: "server_error", code: null, message },
      }));
      if (failure !== undefined) return failure;
      const id = this.#id("resp", "fake");
      const resp = response(id, decided.parts, { input: Math.ceil(r.body.length / 4), output: 20 });
      resp.model = r.json.model ?? "unknown";
      resp.store = r.json.store ?? true;
      // Codex's freeform tool: a custom_tool_call item (the shared builder knows function calls only).
      if (decided.custom !== undefined)
        (resp.output as unknown[]).push({
          id: `ctc_${id}`,
          type: "custom_tool_call",
          status: "completed",
          call_id: decided.custom.id,
          name: decided.custom.name,
          input: decided.custom.input,
        });
      if (r.json.stream !== true) return json(200, resp);
      return { status: 200, headers: sseHeaders(), body: responseEvents(resp) };
    }
    r.phase = "unknown";
    return json(404, {
      error: { type: "not_found_error", message: `fake provider: no ${r.method} ${path}` },
    });
  }

  #takeFailure(phase: string): Failure | undefined {
    const at = this.#failures.findIndex((f) => f.phase === phase);
    return at === -1 ? undefined : this.#failures.splice(at, 1)[0];
  }

  /** The Anthropic side of the script (Claude Code: Read tool, then recall). */
  #anthropic(req: Record<string, any>): { phase: string; parts: Part[] } {
    const tools: string[] = (req.tools ?? []).map((t: { name?: string }) => t.name ?? "");
    const messages: any[] = req.messages ?? [];
    const last = [...messages].reverse().find((m) => m.role === "user");
    const blocks: any[] = Array.isArray(last?.content) ? last.content : [];
    const answered = blocks
      .filter((b) => b.type === "tool_result")
      .map((b) => ({ id: String(b.tool_use_id), text: resultText(b.content) }));
    const text = typeof last?.content === "string" ? last.content : textOf(blocks);
    const workdir = /Primary working directory: ([^\s\\"]+)/.exec(JSON.stringify(req))?.[1];
    if (!tools.includes("Read")) return { phase: "side", parts: [{ text: "ok" }] };
    return this.#script({
      tools,
      answered,
      userText: text,
      body: JSON.stringify(messages),
      call: (purpose) => {
        const id = this.#id("toolu", purpose);
        const file = purpose === "catalog" ? "catalog.txt" : "notes.txt";
        return { call: "Read", id, input: { file_path: `${workdir ?? "."}/${file}` } };
      },
      recallId: () => this.#id("toolu", "recall"),
    });
  }

  /** The Responses side of the script (Codex: its freeform `exec` tool, then recall). */
  #responses(req: Record<string, any>): {
    phase: string;
    parts: Part[];
    custom?: { id: string; name: string; input: string };
  } {
    const input: any[] = Array.isArray(req.input) ? req.input : [];
    const tools: string[] = [
      ...(req.tools ?? []),
      ...input.filter((i) => i.type === "additional_tools").flatMap((i) => i.tools ?? []),
    ].flatMap((t: any) => (t.type === "namespace" ? (t.tools ?? []) : [t]).map((x: any) => x.name));
    // The newest outputs: those after the last model item.
    const lastModel = findLastIndex(input, (i) => i.type !== "message" || i.role === "assistant");
    const tail = input.slice(lastModel + 1);
    const answered = input
      .slice(findLastIndex(input, (i) => i.type === "message" && i.role === "user") + 1)
      .filter((i) => i.type === "function_call_output" || i.type === "custom_tool_call_output")
      .map((i) => ({ id: String(i.call_id), text: resultText(i.output) }));
    const userText = tail
      .filter((i) => i.type === "message" && i.role === "user")
      .map((i) => (typeof i.content === "string" ? i.content : textOf(i.content ?? [])))
      .join("\n");
    if (!tools.includes("exec")) return { phase: "side", parts: [{ text: "ok" }] };
    let custom: { id: string; name: string; input: string } | undefined;
    const decided = this.#script({
      tools,
      answered,
      userText,
      body: JSON.stringify(input),
      call: (purpose) => {
        const id = this.#id("call", purpose);
        custom = { id, name: "exec", input: execSource(purpose) };
        return null;
      },
      recallId: () => this.#id("call", "recall"),
    });
    return custom === undefined ? decided : { ...decided, custom };
  }

  /** The task, format-blind: which step the conversation is at, and the model's answer to it. */
  #script(s: {
    tools: string[];
    answered: { id: string; text: string }[];
    userText: string;
    body: string;
    call: (purpose: "catalog" | "notes") => Part | null;
    recallId: () => string;
  }): { phase: string; parts: Part[] } {
    const calls = (purpose: "catalog" | "notes", phase: string) => {
      const part = s.call(purpose);
      return { phase, parts: part === null ? [] : [part] };
    };
    const recalled = s.answered.find((a) => a.id.includes("_recall_"));
    if (recalled !== undefined) {
      const price = new RegExp(`item-${ASKED} price=(\\S+)`).exec(recalled.text)?.[1];
      return {
        phase: "answer",
        parts: [
          {
            text:
              price === undefined
                ? `${MODEL_MARK} the recall answer has no item-${ASKED}: ${recalled.text.slice(0, 300)}`
                : `item-${ASKED} costs ${price} (read back from the offloaded result).`,
          },
        ],
      };
    }
    if (s.answered.some((a) => a.id.includes("_notes_"))) {
      const mem = STUB_MEM_ID.exec(s.body)?.[0];
      if (!s.tools.includes(RECALL_NAME))
        return { phase: "no-tool", parts: [{ text: `${MODEL_MARK} ${RECALL_NAME} not declared` }] };
      if (mem === undefined || s.body.includes(catalogLine(ASKED)))
        return { phase: "no-stub", parts: [{ text: `${MODEL_MARK} the catalog was not stubbed` }] };
      return {
        phase: "recall",
        parts: [
          { call: RECALL_NAME, id: s.recallId(), input: { mem_id: mem, query: `item-${ASKED} ` } },
        ],
      };
    }
    if (s.answered.some((a) => a.id.includes("_catalog_"))) return calls("notes", "notes");
    if (s.userText.includes(FOLLOW_UP)) return { phase: "follow-up", parts: [{ text: "done" }] };
    return calls("catalog", "catalog");
  }
}

function sseHeaders(): Record<string, string> {
  return { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
}

function textOf(blocks: any[]): string {
  return blocks
    .filter((b) => typeof b?.text === "string")
    .map((b) => b.text as string)
    .join("\n");
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? textOf(content) : "";
}

function findLastIndex<T>(list: T[], test: (item: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i]!)) return i;
  return -1;
}

/**
 * Codex's `exec` runs JavaScript in an isolate (no file system): the catalog is printed by a script that
 * builds it, with a raised output budget so the result is large, as a big file dump would be.
 */
function execSource(purpose: "catalog" | "notes"): string {
  if (purpose === "notes") return `text("notes: prices are in USD");`;
  return [
    `// @exec: {"max_output_tokens": 40000}`,
    `const line = (i) => { const id = String(i).padStart(4, "0"); return \`item-\${id} price=\${(i * 1.5).toFixed(2)} sku=SKU-\${id}-\${((i * 7919) % 100000).toString(36).padStart(4, "0")} stock=\${(i * 37) % 500}\`; };`,
    `text(Array.from({ length: ${CATALOG_LINES} }, (_, i) => line(i)).join("\\n"));`,
  ].join("\n");
}
