/**
 * The middleware's streamed call: the hops' part streams merged into the one stream the app reads.
 * Text, reasoning, the app's tool calls and the provider's own parts pass as they come (a later
 * hop's text and reasoning ids are prefixed, so no id is reused); our tool's input and call parts
 * are held back and answered; each hop's `finish` is held until we know no hop follows, then one
 * finish goes out with the usage summed over the hops. A provider error part passes as it is; a
 * stream that ends early, or a hop the provider refuses, ends with an error part.
 */
import type {
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from "@ai-sdk/provider";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { noticeText } from "../proxy/dialect.ts";
import { addUsage } from "../proxy/usage.ts";
import { nextParams } from "./ai-sdk-prompt.ts";
import {
  decide,
  execute,
  finish,
  finishReasonOf,
  type Hop,
  inspect,
  memosOf,
  type Outcome,
  type Prepared,
} from "./ai-sdk-turn.ts";

type Finish = Extract<LanguageModelV4StreamPart, { type: "finish" }>;

/** One hop's stream read: what the app was sent and what the next hop needs. */
class HopReader {
  readonly content: LanguageModelV4Content[] = [];
  finished: Finish | null = null;
  errored = false;
  readonly #open = new Map<string, LanguageModelV4Content & { text: string }>();
  readonly #ours = new Set<string>();
  readonly #prefix: string;

  constructor(hop: number) {
    this.#prefix = hop === 0 ? "" : `h${hop}-`;
  }

  /** The part to send the app now, or null to hold it back. */
  read(part: LanguageModelV4StreamPart, first: boolean): LanguageModelV4StreamPart | null {
    switch (part.type) {
      case "stream-start":
      case "response-metadata":
        return first ? part : null;
      case "text-start":
      case "reasoning-start": {
        const kind = part.type === "text-start" ? "text" : "reasoning";
        const c = { type: kind, text: "", ...meta(part) } as LanguageModelV4Content & {
          text: string;
        };
        this.#open.set(part.id, c);
        this.content.push(c);
        return { ...part, id: this.#prefix + part.id };
      }
      case "text-delta":
      case "reasoning-delta":
      case "text-end":
      case "reasoning-end": {
        const c = this.#open.get(part.id);
        if (c !== undefined) {
          if ("delta" in part) c.text += part.delta;
          // A thinking block's signature may come on a delta (Anthropic) or on the end part.
          if (part.providerMetadata !== undefined)
            c.providerMetadata = mergeMetadata(c.providerMetadata, part.providerMetadata);
        }
        return { ...part, id: this.#prefix + part.id };
      }
      case "tool-input-start":
        if (part.toolName === RECALL_TOOL_NAME && part.providerExecuted !== true) {
          this.#ours.add(part.id);
          return null;
        }
        return part;
      case "tool-input-delta":
      case "tool-input-end":
        return this.#ours.has(part.id) ? null : part;
      case "tool-call":
        this.content.push(part);
        return part.toolName === RECALL_TOOL_NAME && part.providerExecuted !== true ? null : part;
      case "tool-result":
      case "file":
      case "reasoning-file":
      // The provider's own parts (Anthropic's message_start): the app keeps them in its message too, so a
      // hop's count of what the app keeps includes them.
      case "custom":
        this.content.push(part);
        return part;
      case "finish":
        this.finished = part;
        return null;
      case "error":
        this.errored = true;
        return part;
      default:
        return part;
    }
  }
}

/** Provider metadata merged per provider, later fields over earlier ones. */
function mergeMetadata(
  a: LanguageModelV4Content["providerMetadata"],
  b: NonNullable<LanguageModelV4Content["providerMetadata"]>,
): NonNullable<LanguageModelV4Content["providerMetadata"]> {
  const out = { ...a };
  for (const [provider, fields] of Object.entries(b))
    out[provider] = { ...out[provider], ...fields };
  return out;
}

function meta(part: { providerMetadata?: LanguageModelV4Content["providerMetadata"] }) {
  return part.providerMetadata === undefined ? {} : { providerMetadata: part.providerMetadata };
}

export async function streamTurn(p: Prepared): Promise<LanguageModelV4StreamResult> {
  const first = await p.model.doStream(p.params);
  if (!p.intercept) return { ...first, stream: watched(p, first.stream) };
  return { ...first, stream: streamOf(parts(p, first.stream)) };
}

/**
 * A call without our tool, passed through part by part; its usage is read from its `finish` part, and
 * the turn finished when the stream ends (or the app stops reading it).
 */
function watched(
  p: Prepared,
  stream: ReadableStream<LanguageModelV4StreamPart>,
): ReadableStream<LanguageModelV4StreamPart> {
  async function* pass(): AsyncGenerator<LanguageModelV4StreamPart> {
    const usages: unknown[] = [];
    const reader = stream.getReader();
    let ended = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          ended = true;
          return;
        }
        if (value.type === "finish") usages.push(value.usage);
        yield value;
      }
    } finally {
      // The app stopped reading: the provider's stream is not read any further either.
      if (!ended) await reader.cancel().catch(() => {});
      reader.releaseLock();
      await finish(p, { hops: 0, recalls: 0, ending: "done", memos: [], usages });
    }
  }
  return streamOf(pass());
}

/** An async generator as a stream (pulled as the app reads; a cancel stops the generator). */
function streamOf<T>(gen: AsyncGenerator<T>): ReadableStream<T> {
  return new ReadableStream<T>({
    async pull(controller) {
      const next = await gen.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await gen.return(undefined);
    },
  });
}

async function* parts(
  p: Prepared,
  stream: ReadableStream<LanguageModelV4StreamPart>,
): AsyncGenerator<LanguageModelV4StreamPart> {
  const hops: Hop[] = [];
  let outcome: Outcome = { hops: 0, recalls: 0, ending: "done", memos: [], usages: [] };
  let usage: unknown = null;
  const sent: { type: string }[] = [];
  let current = stream;
  try {
    for (;;) {
      const hop = new HopReader(hops.length);
      const reader = current.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const out = hop.read(value, hops.length === 0);
          if (out === null) continue;
          if (out.type === "text-delta" || out.type === "tool-call" || out.type === "file")
            sent.push(out);
          yield out;
        }
      } catch (error) {
        yield { type: "error", error };
        return;
      } finally {
        reader.releaseLock();
      }
      if (hop.finished === null) {
        if (!hop.errored)
          yield {
            type: "error",
            error: new Error("the provider's stream ended before its finish part"),
          };
        return;
      }
      usage = addUsage(usage, hop.finished.usage);
      outcome.usages.push(hop.finished.usage);
      const ins = inspect(hop.content, hop.finished.finishReason.unified === "tool-calls");
      const next = decide(ins, hops.length, p.settings.maxHops);
      if (next !== "hop") {
        outcome = {
          hops: hops.length,
          recalls: outcome.recalls,
          ending: next,
          memos: memosOf(p, ins, next, hops, hop.content),
          usages: outcome.usages,
        };
        if (
          sent.length === 0 ||
          (next === "exhausted" && !sent.some((s) => s.type === "text-delta"))
        )
          yield* notice(noticeText(next, p.settings.maxHops));
        // A mixed turn's recalls are counted now; their answers are replayed when the next call is
        // spliced.
        if (next === "mixed") outcome.recalls += (await execute(p, ins.ours)).length;
        yield {
          ...hop.finished,
          usage: usage as Finish["usage"],
          finishReason: finishReasonOf(
            hop.finished.finishReason,
            next,
            sent,
          ) as LanguageModelV4GenerateResult["finishReason"],
        };
        return;
      }
      const results = await execute(p, ins.ours);
      outcome.recalls += results.length;
      hops.push({ content: hop.content, calls: ins.ours, results });
      outcome.hops = hops.length;
      try {
        current = (await p.model.doStream(nextParams(p.params, hops))).stream;
      } catch (error) {
        yield { type: "error", error };
        return;
      }
    }
  } finally {
    // Also when the app stopped reading: the hops that ran are logged.
    await finish(p, outcome);
  }
}

function* notice(text: string): Generator<LanguageModelV4StreamPart> {
  const id = "edge-offload-notice";
  yield { type: "text-start", id };
  yield { type: "text-delta", id, delta: text };
  yield { type: "text-end", id };
}
