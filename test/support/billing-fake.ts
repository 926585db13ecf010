/**
 * A fake of the Anthropic Messages API and of OpenAI's Chat Completions and Responses APIs, on 127.0.0.1, that
 * bills like the providers: it applies their documented prompt-cache rules to the bytes it receives, counts
 * tokens with one deterministic tokenizer, reports the usage fields the providers report (buffered and
 * streamed), and keeps a bill of every call at the project's price table. Answers are scripted: a function of
 * the request (say a text, call a tool, call recall_tool_result with given arguments), so a test or a bench
 * drives whole conversations through a proxy.
 *
 * The rules, and where each comes from:
 * - Prefix order. https://platform.claude.com/docs/en/build-with-claude/prompt-caching: "Cache prefixes are
 *   created in the following order: `tools`, `system`, then `messages`." A request's blocks are hashed in that
 *   order, each entry keyed by everything before it (anthropic-prompt.ts, anthropic-cache.ts).
 * - Breakpoints. Same page: "You can define up to 4 cache breakpoints"; more is a 400 here as in the API.
 *   Writes: "Cache writes happen only at your breakpoint" (one entry per breakpoint).
 * - Lookback. Same page: "The lookback window is 20 blocks. The system checks at most 20 positions per
 *   breakpoint, counting the breakpoint itself as the first. If the system finds no matching entry in that
 *   window, checking stops (or resumes from the next explicit breakpoint, if any)." A run of consecutive
 *   tool_use blocks, or of tool_result blocks, counts as one position (the page as quoted by several readers;
 *   the corpus never has such runs, so the bench does not depend on it).
 * - Minimum length. Same page: "Shorter prompts cannot be cached, even if marked with `cache_control`." The
 *   per-model minimum is the price table's `min_cacheable_tokens` (1,024 for Sonnet 4.6, 4,096 for Opus 4.5).
 * - TTLs. Same page: "By default, the cache has a 5-minute lifetime"; "The cache is refreshed for no
 *   additional cost each time the cached content is used"; the lifetime is "measured from the start of the
 *   request that writes or reads the cache entry". The clock is the test's (`fake.clock`), not the wall's.
 * - 1h before 5m. Same page: entries with the longer TTL must come first (a 1h breakpoint after a 5m one is a
 *   400 here); billing by position: "A: the token count at the highest cache hit", "B: … at the highest 1-hour
 *   cache_control block after A", "C: … at the last cache_control block": read A, 1h writes B − A, 5m writes
 *   C − B.
 * - Automatic caching. Same page: "add a single `cache_control` field at the top level of your request body.
 *   The system automatically applies the cache breakpoint to the last cacheable block", and "the 20-block
 *   lookback window all apply the same as with explicit breakpoints".
 * - Usage. Same page: `input_tokens` are the "tokens after the last cache breakpoint"; "the current
 *   `cache_creation_input_tokens` field equals the sum of the values in the `cache_creation` object"
 *   (`ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`).
 *   https://platform.claude.com/docs/en/build-with-claude/streaming: "The token counts shown in the `usage`
 *   field of the `message_delta` event are *cumulative*" (message_start carries the input side first).
 * - Tool use adds tokens. https://platform.claude.com/docs/en/docs/tool-use-pricing-and-tokens:
 *   "we also automatically include a special system prompt for the model which enables tool use": 346 tokens
 *   (tool_choice auto/none) or 313 (any/tool) on the 4.5 models.
 * - Mid-conversation system messages and tools defined in them (`tool_addition`, beta
 *   `inline-tools-2026-09-15`): the placement rules of
 *   https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages are 400s here
 *   (billing/anthropic-prompt.ts); such a message is part of the prefix where it stands ("The cached prefix
 *   stays the same, so the next request still reads it from cache"), and a tool defined there is counted as
 *   a `tools` entry.
 * - OpenAI. https://developers.openai.com/api/docs/guides/prompt-caching: models before GPT-5.6: "Caching is
 *   available for prompts containing 1024 tokens or more, with cache hits occurring in increments of 128
 *   tokens"; "`in_memory`: Entries typically remain active for around 5 to 10 minutes of inactivity, up to
 *   one hour" (the fake: 5 minutes). GPT-5.6 and later: breakpoints (an implicit one "near the latest user or
 *   tool message", explicit `prompt_cache_breakpoint` parts), an exact prefix match at a breakpoint, no
 *   128-token rounding, writes reported as `cache_write_tokens` and billed at 1.25× input
 *   (billing/openai-cache.ts). `prompt_cache_key` routes: entries are kept per key. Hits are reported in
 *   `usage.prompt_tokens_details.cached_tokens` (Chat) and `usage.input_tokens_details.cached_tokens`
 *   (Responses); a Chat stream carries usage only with `stream_options.include_usage`.
 * - Prices: the fake's own list (billing/prices.ts), transcribed from the pricing pages, never the
 *   project's table.
 *
 * Where the fake may differ from the real services:
 * - Tokens: its tokenizer (billing/tokenizer.ts) is no provider's; real counts differ by some percent either
 *   way, per content kind. Framing (3 tokens per block, 3 per message) is a guess; images cost a flat 1,600.
 * - Rendering: a block's tokens are counted on its text (a tool_use on its name and input JSON, a tool
 *   definition on name, description and schema), not on the provider's internal template.
 * - Anthropic: `tool_choice` and thinking settings invalidate the message blocks only (the docs mark some
 *   tiers model-specific); images, web-search and citation toggles, speed and effort are not part of the key.
 *   `cache_control` inside a tool_result's content is ignored. Concurrency is not modelled: an entry is
 *   readable as soon as the request that wrote it was billed (the API: once its response begins). No
 *   eviction before the TTL, no per-workspace isolation beyond the optional conversation scope.
 * - OpenAI: routing is exact per `prompt_cache_key` (no machine overflow, no miss for a key over 15 requests
 *   a minute); before GPT-5.6 a prompt's token prefix is compared segment by segment (messages, tools), and
 *   24h retention is taken at its maximum; from GPT-5.6 on an entry is matched at segment boundaries only
 *   ("near the latest user or tool message" is taken as the end of the prompt).
 */
import { anthropicBody, anthropicStream, errorBody, openaiBody } from "./billing/answers.ts";
import {
  AnthropicCache,
  API_RULES,
  type CacheOutcome,
  type CacheRules,
} from "./billing/anthropic-cache.ts";
import { InvalidRequest, promptOf } from "./billing/anthropic-prompt.ts";
import { addTokens, type BillTokens, billUsd, NO_TOKENS } from "./billing/bill.ts";
import { FakeClock } from "./billing/clock.ts";
import { type AnswerBlock, type TokenCounter, tokenizerCounter } from "./billing/counter.ts";
import { chatSegments, OpenAICache, responsesSegments } from "./billing/openai-cache.ts";
import { fakePrice } from "./billing/prices.ts";
import { type Served, serve } from "./billing/server.ts";
import { chatEvents, responseEvents } from "./providers.ts";

export type Format = "anthropic" | "openai-chat" | "openai-responses";

/** What a script sees of a call. */
export interface Incoming {
  seq: number;
  format: Format;
  path: string;
  headers: Headers;
  json: Record<string, unknown>;
  /** `x-fake-conversation` (passed through by a proxy): the conversation the call belongs to, or "". */
  conversation: string;
}

/** A scripted answer: content blocks in Anthropic's shape (text, tool_use), or an error. */
export type Scripted =
  | { content: AnswerBlock[]; stop_reason?: string }
  | { error: { status: number; type?: string; message: string } };

export type Script = (call: Incoming) => Scripted;

export const say = (text: string): Scripted => ({ content: [{ type: "text", text }] });

let ids = 0;
export const callTool = (name: string, input: Record<string, unknown>, id?: string): Scripted => ({
  content: [{ type: "tool_use", id: id ?? `toolu_fake_${++ids}`, name, input }],
});

/** One billed call. Tokens are what the provider would bill; usd is at the project's price table. */
export interface BilledCall {
  seq: number;
  /** The fake clock at the call (ms). */
  at: number;
  format: Format;
  model: string;
  conversation: string;
  stream: boolean;
  tokens: BillTokens;
  usd: number | null;
  /** The usage object as the answer reported it. */
  usage: Record<string, unknown>;
  /** The block the cache read ended at (Anthropic), or null. */
  hit: string | null;
  /** The same call under each shadow ledger (Anthropic only). */
  shadows: Record<string, { tokens: BillTokens; usd: number | null }>;
  answer: AnswerBlock[];
}

/** Another ledger over the same requests: other token counts and/or other cache rules, for diagnosis. */
export interface ShadowLedger {
  counter?: TokenCounter;
  rules?: CacheRules;
  /** Cache entries per conversation (x-fake-conversation) instead of shared by everyone. */
  scoped?: boolean;
}

export interface BillingFakeOptions {
  shadows?: Record<string, ShadowLedger>;
  /** Sees each billed call with the request as parsed (a bench prices it again its own way). */
  observe?: (call: BilledCall, request: Record<string, unknown>) => void;
}

function billed(o: CacheOutcome, output: number): BillTokens {
  return {
    input: o.input_tokens,
    cache_read: o.cache_read_input_tokens,
    cache_write_5m: o.cache_write_5m_tokens,
    cache_write_1h: o.cache_write_1h_tokens,
    output,
  };
}

function formatOf(path: string): Format | null {
  if (path.endsWith("/v1/messages")) return "anthropic";
  if (path.endsWith("/chat/completions")) return "openai-chat";
  if (path.endsWith("/responses")) return "openai-responses";
  return null;
}

/** The token-counting endpoints, by the API whose requests they read. */
function countingFormatOf(path: string): "anthropic" | "openai-responses" | null {
  if (path.endsWith("/v1/messages/count_tokens")) return "anthropic";
  if (path.endsWith("/responses/input_tokens")) return "openai-responses";
  return null;
}

/** A request's body as a JSON object, or the API's 400 when it is not one. */
async function jsonObject(
  req: Request,
  format: Format,
): Promise<Record<string, unknown> | Response> {
  try {
    const parsed: unknown = JSON.parse(await req.text());
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error();
    return parsed as Record<string, unknown>;
  } catch {
    return json(errorBody(format, "invalid_request_error", "the body is not a JSON object"), 400);
  }
}

/** The `anthropic-beta` header's values (comma-separated, as the SDKs send several). */
function betasOf(headers: Headers): string[] {
  return (headers.get("anthropic-beta") ?? "")
    .split(",")
    .map((b) => b.trim())
    .filter((b) => b !== "");
}

function json(body: string, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function events(list: readonly string[]): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < list.length) c.enqueue(enc.encode(list[i++]!));
      else c.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}

/**
 * The fake on 127.0.0.1 (`start()`), or as a fetch handler (`fetch()`). Answers come from the queue
 * (`reply()`), then from `script`; cache lifetimes run on `clock`; `calls` is the bill.
 */
export class BillingFake {
  readonly clock = new FakeClock();
  readonly calls: BilledCall[] = [];
  /** The answer when the queue is empty (default: a short text). */
  script: Script = () => say("ok");
  url = "";
  readonly #queue: Script[] = [];
  readonly #anthropic = new AnthropicCache(() => this.clock.now());
  readonly #openai = new OpenAICache(() => this.clock.now());
  readonly #shadows: [string, ShadowLedger, AnthropicCache][];
  readonly #observe: BillingFakeOptions["observe"];
  #served: Served | undefined;
  #seq = 0;
  /**
   * The token-counting calls (Anthropic's `POST /v1/messages/count_tokens`, OpenAI's
   * `POST /v1/responses/input_tokens`): answered with the prompt's tokens as a call would bill them, never
   * billed ("Token counting is free to use"), kept here apart from the bill.
   */
  readonly counts: {
    format: Format;
    conversation: string;
    input_tokens: number;
    /** The key it came with (`x-api-key`, else `authorization`). */
    credential: string | null;
  }[] = [];
  /** False: the counting endpoints answer 404, as an upstream without them would. */
  counting = true;

  constructor(options: BillingFakeOptions = {}) {
    this.#shadows = Object.entries(options.shadows ?? {}).map(([name, s]) => [
      name,
      s,
      new AnthropicCache(() => this.clock.now(), s.rules ?? API_RULES),
    ]);
    this.#observe = options.observe;
  }

  /** Queue answers for the next calls (before `script`). */
  reply(...scripts: (Scripted | Script)[]): void {
    for (const s of scripts) this.#queue.push(typeof s === "function" ? s : () => s);
  }

  /** Forget every cache entry (the bill stays). */
  flush(): void {
    this.#anthropic.clear();
    this.#openai.clear();
    for (const [, , cache] of this.#shadows) cache.clear();
  }

  /** The calls of one conversation. */
  of(conversation: string): BilledCall[] {
    return this.calls.filter((c) => c.conversation === conversation);
  }

  /** The summed bill of some calls (all by default). */
  total(calls: readonly BilledCall[] = this.calls): { usd: number; tokens: BillTokens } {
    let tokens: BillTokens = NO_TOKENS;
    let usd = 0;
    for (const c of calls) {
      tokens = addTokens(tokens, c.tokens);
      usd += c.usd ?? 0;
    }
    return { usd, tokens };
  }

  async start(): Promise<string> {
    this.#served = await serve((req) => this.fetch(req));
    this.url = this.#served.url;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.#served?.close();
    this.#served = undefined;
  }

  /** The fake as a fetch handler (the Node server calls it; a test may call it directly). */
  async fetch(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const counting = countingFormatOf(path);
    if (counting !== null && req.method === "POST") return this.#count(req, counting);
    const format = formatOf(path);
    if (req.method !== "POST" || format === null)
      return json(errorBody("anthropic", "not_found_error", `no route ${req.method} ${path}`), 404);
    const body = await jsonObject(req, format);
    if (body instanceof Response) return body;
    const incoming: Incoming = {
      seq: ++this.#seq,
      format,
      path,
      headers: req.headers,
      json: body,
      conversation: req.headers.get("x-fake-conversation") ?? "",
    };
    try {
      return format === "anthropic" ? this.#messages(incoming) : this.#openaiCall(incoming);
    } catch (e) {
      if (!(e instanceof InvalidRequest)) throw e;
      return json(errorBody(format, "invalid_request_error", e.message), 400);
    }
  }

  /**
   * A token count: the request is read as a call of its API would be (a 400 where the call's would be), its
   * prompt counted by the same tokenizer and framing the bill uses, and `{ input_tokens }` answered. OpenAI's
   * counts a Responses-shaped request ("Returns input token counts of the request").
   */
  async #count(req: Request, format: "anthropic" | "openai-responses"): Promise<Response> {
    if (!this.counting)
      return json(errorBody(format, "not_found_error", "no token counting here"), 404);
    const request = await jsonObject(req, format);
    if (request instanceof Response) return request;
    let input_tokens: number;
    try {
      if (format === "anthropic") {
        const prompt = promptOf(request, betasOf(req.headers));
        input_tokens = tokenizerCounter.prompt(prompt, request).reduce((a, b) => a + b, 0);
      } else {
        if (typeof request.model !== "string" || request.model === "")
          throw new InvalidRequest("model: a model is required");
        input_tokens = responsesSegments(request).reduce((a, g) => a + g.tokens, 0);
      }
    } catch (e) {
      if (!(e instanceof InvalidRequest)) throw e;
      return json(errorBody(format, "invalid_request_error", e.message), 400);
    }
    const conversation = req.headers.get("x-fake-conversation") ?? "";
    const credential = req.headers.get("x-api-key") ?? req.headers.get("authorization");
    this.counts.push({ format, conversation, input_tokens, credential });
    return json(
      JSON.stringify(
        format === "anthropic"
          ? { input_tokens }
          : { object: "response.input_tokens", input_tokens },
      ),
    );
  }

  #answer(incoming: Incoming): Scripted {
    const next = this.#queue.shift() ?? this.script;
    return next(incoming);
  }

  #messages(incoming: Incoming): Response {
    const request = incoming.json;
    // A 400 before any answer, as the API validates first.
    const prompt = promptOf(request, betasOf(incoming.headers));
    const scripted = this.#answer(incoming);
    if ("error" in scripted) return this.#error(incoming.format, scripted.error);
    const model = prompt.model;
    const outcome = this.#anthropic.bill(prompt, tokenizerCounter.prompt(prompt, request));
    const output = tokenizerCounter.output(scripted.content);
    const tokens = billed(outcome, output);
    const shadows: BilledCall["shadows"] = {};
    for (const [name, s, cache] of this.#shadows) {
      const counter = s.counter ?? tokenizerCounter;
      const scope = s.scoped ? incoming.conversation : "";
      const t = billed(
        cache.bill(prompt, counter.prompt(prompt, request), scope),
        counter.output(scripted.content),
      );
      shadows[name] = { tokens: t, usd: billUsd(model, t) };
    }
    const usage = {
      input_tokens: tokens.input,
      cache_creation_input_tokens: tokens.cache_write_5m + tokens.cache_write_1h,
      cache_read_input_tokens: tokens.cache_read,
      cache_creation: {
        ephemeral_5m_input_tokens: tokens.cache_write_5m,
        ephemeral_1h_input_tokens: tokens.cache_write_1h,
      },
      output_tokens: output,
      service_tier: "standard" as const,
    };
    const stream = request.stream === true;
    this.#record(incoming, { model, stream, tokens, usage, hit: outcome.hit, shadows }, scripted);
    const message = anthropicBody(
      `msg_fake_${incoming.seq}`,
      model,
      scripted.content,
      usage,
      scripted.stop_reason,
    );
    return stream
      ? events(anthropicStream(message))
      : json(JSON.stringify(message), 200, { "request-id": `req_fake_${incoming.seq}` });
  }

  #openaiCall(incoming: Incoming): Response {
    const request = incoming.json;
    const model = typeof request.model === "string" ? request.model : "";
    if (model === "") throw new InvalidRequest("model: a model is required");
    const chat = incoming.format === "openai-chat";
    const segments = chat ? chatSegments(request) : responsesSegments(request);
    const scripted = this.#answer(incoming);
    if ("error" in scripted) return this.#error(incoming.format, scripted.error);
    const cacheOptions = request.prompt_cache_options as { mode?: unknown } | undefined;
    const breakpoints = fakePrice(model)?.breakpoints === true;
    const outcome = this.#openai.bill(model, segments, {
      key: request.prompt_cache_key,
      retention: request.prompt_cache_retention,
      breakpoints,
      explicit: cacheOptions?.mode === "explicit",
    });
    const output = tokenizerCounter.output(scripted.content);
    const tokens: BillTokens = {
      input: outcome.prompt_tokens - outcome.cached_tokens - outcome.cache_write_tokens,
      cache_read: outcome.cached_tokens,
      cache_write_5m: outcome.cache_write_tokens,
      cache_write_1h: 0,
      output,
    };
    const sums = { ...outcome, output_tokens: output };
    const id = `${chat ? "chatcmpl" : "resp"}_fake_${incoming.seq}`;
    const body = openaiBody(
      chat ? "chat" : "responses",
      id,
      model,
      scripted.content,
      sums,
      breakpoints,
    );
    const stream = request.stream === true;
    const usage = body.usage as Record<string, unknown>;
    this.#record(incoming, { model, stream, tokens, usage, hit: null, shadows: {} }, scripted);
    if (!stream) return json(JSON.stringify(body));
    if (!chat) return events(responseEvents(body));
    const options = request.stream_options as { include_usage?: unknown } | undefined;
    return events(chatEvents(body, options?.include_usage === true));
  }

  #record(
    incoming: Incoming,
    billed: Pick<BilledCall, "model" | "stream" | "tokens" | "usage" | "hit" | "shadows">,
    scripted: { content: AnswerBlock[] },
  ): void {
    const call: BilledCall = {
      seq: incoming.seq,
      at: this.clock.now(),
      format: incoming.format,
      conversation: incoming.conversation,
      usd: billUsd(billed.model, billed.tokens),
      answer: scripted.content,
      ...billed,
    };
    this.calls.push(call);
    this.#observe?.(call, incoming.json);
  }

  #error(format: Format, e: { status: number; type?: string; message: string }): Response {
    const type = e.type ?? (e.status === 429 ? "rate_limit_error" : "api_error");
    return json(errorBody(format, type, e.message), e.status);
  }
}

export type { AnswerBlock, BillTokens, CacheRules, TokenCounter };
export { FakeClock };
