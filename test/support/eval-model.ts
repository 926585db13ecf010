/**
 * A fake model on 127.0.0.1 for the eval's tests, speaking the Messages, Chat Completions and Responses APIs
 * (by path), whose next action depends on what its prompt shows. The sessions it is asked about
 * (`catalogSessions`) load a large price catalog, then ask for the price of one item at a time:
 * - the catalog in full in its prompt: it answers with the price;
 * - only a stub of it: the "recalling" model calls recall_tool_result with the item as query (the stub's
 *   mem_id makes that possible) and answers once the recall's answer shows the price; the "guessing" model
 *   answers without recalling, wrong; the "noisy" model recalls, and words every answer at random (seeded).
 * Asked as a judge (the eval's judge prompt), it finds two answers equivalent when they name the same price.
 *
 * It shares no code with the eval: its usage is its own count (a token per 4 chars of the request body, and
 * of its answer), and it records every request and the usage it reported, for the tests to check the eval's
 * figures against. Failure modes: every call refused with one status, the first calls throttled (429 with
 * retry-after), temperature refused (as reasoning models do).
 */
import type { ServerResponse } from "node:http";
import { type Incoming, type LocalServer, listenLocal } from "./local-server.ts";

export type ModelMode = "recalling" | "guessing" | "noisy";

export interface FakeModelOptions {
  mode: ModelMode;
  /** The noisy model's wording draws (default 7). */
  seed?: number;
  /** Every call answered with this error. */
  fail?: { status: number; type: string; message: string };
  /** The first `throttle` calls get a 429 with `retry-after: 1`. */
  throttle?: number;
  /** A call that sets `temperature` gets a 400 naming it. */
  refuseTemperature?: boolean;
}

type Format = "anthropic" | "openai-chat" | "openai-responses";

export interface Reported {
  format: Format;
  input: number;
  output: number;
  judge: boolean;
}

const RECALL = "recall_tool_result";

function formatOf(path: string): Format | null {
  const p = path.split("?")[0]!;
  if (p.endsWith("/v1/messages")) return "anthropic";
  if (p.endsWith("/chat/completions")) return "openai-chat";
  if (p.endsWith("/responses")) return "openai-responses";
  return null;
}

function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (typeof v === "object" && v !== null) for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** A seeded generator (xorshift32), so the noisy model's run is reproducible. */
function generator(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

type Action = { text: string } | { recall: { mem_id: string; query: string } };

export class FakeModel {
  readonly received: Incoming[] = [];
  readonly reported: Reported[] = [];
  url = "";
  readonly #options: FakeModelOptions;
  readonly #rand: () => number;
  #throttle: number;
  #server: LocalServer | undefined;
  #ids = 0;

  constructor(options: FakeModelOptions) {
    this.#options = options;
    this.#rand = generator(options.seed ?? 7);
    this.#throttle = options.throttle ?? 0;
  }

  async start(): Promise<string> {
    this.#server = await listenLocal((req, res) => this.#handle(req, res));
    this.url = this.#server.url;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.#server?.stop();
  }

  /** Requests that reached the model's logic (not refused or throttled), judges left out. */
  get answered(): number {
    return this.reported.filter((r) => !r.judge).length;
  }

  /** The error this call gets instead of an answer, if any. */
  #refusal(req: Incoming): {
    status: number;
    type: string;
    message: string;
    headers?: Record<string, string>;
    param?: string;
  } | null {
    if (this.#options.fail !== undefined) return this.#options.fail;
    if (this.#throttle > 0) {
      this.#throttle--;
      return {
        status: 429,
        type: "rate_limit_error",
        message: "Too many requests",
        headers: { "retry-after": "1" },
      };
    }
    if (this.#options.refuseTemperature && req.json.temperature !== undefined)
      return {
        status: 400,
        type: "invalid_request_error",
        message:
          "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
        param: "temperature",
      };
    return null;
  }

  #handle(req: Incoming, res: ServerResponse): void {
    this.received.push(req);
    const format = formatOf(req.path);
    if (format === null || req.method !== "POST") {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end('{"error":{"message":"not found"}}');
      return;
    }
    const refused = this.#refusal(req);
    if (refused !== null) {
      const { status, type, message, param } = refused;
      const body =
        format === "anthropic"
          ? { type: "error", error: { type, message } }
          : { error: { message, type, param: param ?? null, code: type } };
      res
        .writeHead(status, { "content-type": "application/json", ...refused.headers })
        .end(JSON.stringify(body));
      return;
    }
    const all = strings(req.json);
    const judge = all.some((s) => s.includes("EQUIVALENT or DIFFERENT"));
    const action = judge ? this.#judge(all) : this.#act(req, all);
    const output = "text" in action ? action.text.length : 80;
    const usage = { input: Math.ceil(req.body.length / 4), output: Math.ceil(output / 4) };
    this.reported.push({ format, ...usage, judge });
    res
      .writeHead(200, { "content-type": "application/json", "request-id": `req_${++this.#ids}` })
      .end(JSON.stringify(this.#answer(format, req.json.model, action, usage)));
  }

  #judge(all: string[]): Action {
    const prompt = all.find((s) => s.includes("EQUIVALENT or DIFFERENT"))!;
    const answers = [...prompt.matchAll(/Answer \d:\n<<<\n([\s\S]*?)\n>>>/g)].map((m) => m[1]!);
    const price = (t: string) => /(\d+\.\d\d)/.exec(t)?.[1] ?? null;
    // The same price, or neither names one (two ways of saying "ready").
    const same = answers.length === 2 && price(answers[0]!) === price(answers[1]!);
    return {
      text: same ? "EQUIVALENT\nThe same price, or none." : "DIFFERENT\nThe prices differ.",
    };
  }

  #act(req: Incoming, all: string[]): Action {
    const questions = [...all.join("\n").matchAll(/What is the price of (SKU-\d+-\d{4})\?/g)];
    const sku = questions[questions.length - 1]?.[1];
    const noisy = this.#options.mode === "noisy";
    const pick = (options: string[]) =>
      noisy ? options[Math.floor(this.#rand() * options.length)]! : options[0]!;
    if (sku === undefined) return { text: pick(["Ready.", "All set.", "Done: ask me anything."]) };
    const value = new RegExp(`"sku":\\s*"${sku}",\\s*"price":\\s*([0-9.]+)`);
    for (const s of all) {
      const m = value.exec(s);
      if (m === null) continue;
      // As the catalog prices it (JSON writes 513.00 as 513).
      const price = Number(m[1]).toFixed(2);
      return {
        text: pick([
          `The price of ${sku} is ${price}.`,
          `${sku} costs ${price}.`,
          `Found it: ${sku} is listed at ${price}.`,
        ]),
      };
    }
    const memId = all.map((s) => /trm_[0-9a-f]{24}/.exec(s)?.[0]).find((x) => x !== undefined);
    const canRecall = req.body.includes(`"${RECALL}"`);
    if (memId !== undefined && canRecall && this.#options.mode !== "guessing")
      return { recall: { mem_id: memId, query: sku } };
    return { text: `I no longer have the catalog; my best guess for ${sku} is 10.00.` };
  }

  #answer(
    format: Format,
    model: unknown,
    action: Action,
    usage: { input: number; output: number },
  ) {
    const n = ++this.#ids;
    const args = "recall" in action ? JSON.stringify(action.recall) : "";
    if (format === "anthropic")
      return {
        id: `msg_fake_${n}`,
        type: "message",
        role: "assistant",
        model,
        content:
          "text" in action
            ? [{ type: "text", text: action.text }]
            : [{ type: "tool_use", id: `toolu_fake_${n}`, name: RECALL, input: action.recall }],
        stop_reason: "text" in action ? "end_turn" : "tool_use",
        stop_sequence: null,
        usage: {
          input_tokens: usage.input,
          output_tokens: usage.output,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      };
    if (format === "openai-chat")
      return {
        id: `chatcmpl-fake-${n}`,
        object: "chat.completion",
        created: 1_760_000_000,
        model,
        choices: [
          {
            index: 0,
            message:
              "text" in action
                ? { role: "assistant", content: action.text, refusal: null }
                : {
                    role: "assistant",
                    content: null,
                    refusal: null,
                    tool_calls: [
                      {
                        id: `call_fake_${n}`,
                        type: "function",
                        function: { name: RECALL, arguments: args },
                      },
                    ],
                  },
            finish_reason: "text" in action ? "stop" : "tool_calls",
            logprobs: null,
          },
        ],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: 0 },
        },
      };
    return {
      id: `resp_fake_${n}`,
      object: "response",
      created_at: 1_760_000_000,
      status: "completed",
      model,
      output:
        "text" in action
          ? [
              {
                type: "message",
                id: `msg_fake_${n}`,
                status: "completed",
                role: "assistant",
                content: [{ type: "output_text", text: action.text, annotations: [] }],
              },
            ]
          : [
              {
                type: "function_call",
                id: `fc_fake_${n}`,
                call_id: `call_fake_${n}`,
                name: RECALL,
                arguments: args,
                status: "completed",
              },
            ],
      usage: {
        input_tokens: usage.input,
        output_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    };
  }
}

/** The price of an item, from its number: the same everywhere the catalog is built. */
const priceOf = (s: number, i: number) => (((s * 7919 + i * 104729) % 90000) / 100 + 10).toFixed(2);

/**
 * `count` sessions in the corpus format, each: the user asks for the catalog (1,500 items, ~80K chars of
 * JSON: large, so offloaded once settled), then a status check (so the catalog is no longer the freshest
 * result), then `questions` questions about items deep in the catalog (past the stub's preview).
 */
export function catalogSessions(count: number, questions = 4): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, s) => {
    const items = Array.from({ length: 1500 }, (_, i) => ({
      sku: `SKU-${s}-${String(i).padStart(4, "0")}`,
      price: Number(priceOf(s, i)),
      name: `Item ${i} of catalog ${s}`,
    }));
    const messages: Record<string, unknown>[] = [
      { role: "user", content: "Load the catalog, then check the service status." },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: `toolu_cat_${s}`, name: "get_catalog", input: {} }],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: `toolu_cat_${s}`, content: JSON.stringify(items) },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Catalog loaded." },
          { type: "tool_use", id: `toolu_st_${s}`, name: "get_status", input: { verbose: false } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `toolu_st_${s}`, content: "status: ok" }],
      },
      { role: "assistant", content: "Ready." },
    ];
    for (let q = 0; q < questions; q++) {
      const i = 700 + q * 173 + s * 11;
      const sku = `SKU-${s}-${String(i).padStart(4, "0")}`;
      messages.push(
        { role: "user", content: `What is the price of ${sku}?` },
        { role: "assistant", content: `The price of ${sku} is ${priceOf(s, i)}.` },
      );
    }
    return { id: `catalog-${s}`, system: "You answer questions about the catalog.", messages };
  });
}
