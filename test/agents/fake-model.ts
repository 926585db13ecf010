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
 * The purpose of each call is carried in its id (`toolu_catalog_3`), which the agents echo back. Another
 * script can be given (the trace recorder plays a longer session with it).
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

/** What a script reads from one request, whatever the API. */
export interface Turn {
  api: "anthropic" | "responses";
  /** Tool names the request declares (top level, `additional_tools`, inside namespaces). */
  tools: string[];
  /** The results of the newest turn: those after the last user message. */
  answered: { id: string; text: string }[];
  /** Every tool result of the conversation. */
  results: number;
  /** The user's text of the newest turn. */
  userText: string;
  /** The conversation as JSON (where a stub would be). */
  body: string;
  /** Claude Code's working directory (from its environment message). */
  workdir: string | undefined;
}

/**
 * The model's answer: a text, or one call. An object input is a function call (`tool_use`, `function_call`),
 * a string input a freeform one (Responses `custom_tool_call`). The call's id carries `purpose`.
 */
export interface Decision {
  phase: string;
  text?: string;
  call?: { purpose: string; name: string; input: Record<string, unknown> | string };
}

export type Script = (turn: Turn) => Decision;

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
  readonly #script: Script;

  constructor(script: Script = priceTask) {
    this.#script = script;
  }

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
    // The proxy counts a result it stubbed on arrival (src/proxy/token-count.ts).
    if (r.method === "POST" && path === "/openai/v1/responses/input_tokens") {
      r.phase = "input_tokens";
      return json(200, {
        object: "response.input_tokens",
        input_tokens: Math.ceil(r.body.length / 4),
      });
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
      const decided = this.#script(anthropicTurn(r.json));
      const failure = failed(decided.phase, (message) => ({
        type: "error",
        error: { type: "api_error", message },
      }));
      if (failure !== undefined) return failure;
      const message = anthropicMessage(this.#id("msg", "fake"), this.#parts(decided, "toolu"), {
        input: Math.ceil(r.body.length / 4),
        output: 20,
      });
      message.model = r.json.model ?? "unknown";
      if (r.json.stream !== true) return json(200, message);
      return { status: 200, headers: sseHeaders(), body: anthropicEvents(message) };
    }
    if (r.method === "POST" && path === "/openai/v1/responses") {
      const decided = this.#script(responsesTurn(r.json));
      const failure = failed(decided.phase, (message) => ({
        error: { type: "server_error", code: null, message },
      }));
      if (failure !== undefined) return failure;
      const id = this.#id("resp", "fake");
      const freeform = typeof decided.call?.input === "string";
      const parts = freeform ? [] : this.#parts(decided, "call");
      const resp = response(id, parts, { input: Math.ceil(r.body.length / 4), output: 20 });
      resp.model = r.json.model ?? "unknown";
      resp.store = r.json.store ?? true;
      // A freeform call (Codex's `exec`): a custom_tool_call item, which the shared builder does not make.
      if (freeform && decided.call !== undefined)
        (resp.output as unknown[]).push({
          id: `ctc_${id}`,
          type: "custom_tool_call",
          status: "completed",
          call_id: this.#id("call", decided.call.purpose),
          name: decided.call.name,
          input: decided.call.input,
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

  /** A decision as the provider's content parts (the call gets a fresh id carrying its purpose). */
  #parts(d: Decision, prefix: string): Part[] {
    if (d.call === undefined) return [{ text: d.text ?? "" }];
    const input = typeof d.call.input === "string" ? { input: d.call.input } : d.call.input;
    return [{ call: d.call.name, id: this.#id(prefix, d.call.purpose), input }];
  }
}

/** What a Messages request says (Claude Code). */
export function anthropicTurn(req: Record<string, any>): Turn {
  const messages: any[] = req.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === "user");
  const blocks: any[] = Array.isArray(last?.content) ? last.content : [];
  return {
    api: "anthropic",
    tools: (req.tools ?? []).map((t: { name?: string }) => t.name ?? ""),
    answered: blocks
      .filter((b) => b.type === "tool_result")
      .map((b) => ({ id: String(b.tool_use_id), text: resultText(b.content) })),
    results: messages
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: any) => b.type === "tool_result").length,
    userText: typeof last?.content === "string" ? last.content : textOf(blocks),
    body: JSON.stringify(messages),
    workdir: /Primary working directory: ([^\s\\"]+)/.exec(JSON.stringify(req))?.[1],
  };
}

/** What a Responses request says (Codex: whole history in `input`, tools in `additional_tools`). */
export function responsesTurn(req: Record<string, any>): Turn {
  const input: any[] = Array.isArray(req.input) ? req.input : [];
  const isOutput = (i: any) =>
    i.type === "function_call_output" || i.type === "custom_tool_call_output";
  const lastUser = findLastIndex(input, (i) => i.type === "message" && i.role === "user");
  // The newest user text: after the last model item.
  const lastModel = findLastIndex(input, (i) => i.type !== "message" || i.role === "assistant");
  return {
    api: "responses",
    tools: [
      ...(req.tools ?? []),
      ...input.filter((i) => i.type === "additional_tools").flatMap((i) => i.tools ?? []),
    ].flatMap((t: any) => (t.type === "namespace" ? (t.tools ?? []) : [t]).map((x: any) => x.name)),
    answered: input
      .slice(lastUser + 1)
      .filter(isOutput)
      .map((i) => ({ id: String(i.call_id), text: resultText(i.output) })),
    results: input.filter(isOutput).length,
    userText: input
      .slice(lastModel + 1)
      .filter((i) => i.type === "message" && i.role === "user")
      .map((i) => (typeof i.content === "string" ? i.content : textOf(i.content ?? [])))
      .join("\n"),
    body: JSON.stringify(input),
    workdir: undefined,
  };
}

/**
 * The price task, format-blind: which step the conversation is at, and the model's answer to it. Claude Code
 * reads files with `Read`; Codex's `exec` runs JavaScript (no file system), so its "read" prints the text.
 */
export function priceTask(t: Turn): Decision {
  const agentTool = t.api === "anthropic" ? "Read" : "exec";
  if (!t.tools.includes(agentTool)) return { phase: "side", text: "ok" };
  const read = (purpose: "catalog" | "notes"): Decision => ({
    phase: purpose,
    call:
      t.api === "anthropic"
        ? { purpose, name: "Read", input: { file_path: `${t.workdir ?? "."}/${purpose}.txt` } }
        : { purpose, name: "exec", input: execSource(purpose) },
  });
  const recalled = t.answered.find((a) => a.id.includes("_recall_"));
  if (recalled !== undefined) {
    const price = new RegExp(`item-${ASKED} price=(\\S+)`).exec(recalled.text)?.[1];
    return {
      phase: "answer",
      text:
        price === undefined
          ? `${MODEL_MARK} the recall answer has no item-${ASKED}: ${recalled.text.slice(0, 300)}`
          : `item-${ASKED} costs ${price} (read back from the offloaded result).`,
    };
  }
  if (t.answered.some((a) => a.id.includes("_notes_"))) {
    const mem = STUB_MEM_ID.exec(t.body)?.[0];
    if (!t.tools.includes(RECALL_NAME))
      return { phase: "no-tool", text: `${MODEL_MARK} ${RECALL_NAME} not declared` };
    if (mem === undefined || t.body.includes(catalogLine(ASKED)))
      return { phase: "no-stub", text: `${MODEL_MARK} the catalog was not stubbed` };
    return {
      phase: "recall",
      call: {
        purpose: "recall",
        name: RECALL_NAME,
        input: { mem_id: mem, query: `item-${ASKED} ` },
      },
    };
  }
  if (t.answered.some((a) => a.id.includes("_catalog_"))) return read("notes");
  if (t.userText.includes(FOLLOW_UP)) return { phase: "follow-up", text: "done" };
  return read("catalog");
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
