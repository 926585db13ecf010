/**
 * One proxied call, from the client's request to the answer it reads, with nothing of HTTP routing
 * in it: begin the session's turn, pass the request through untouched when compaction is off (or
 * the session cannot be read), else splice back what the session remembers (recall answers of
 * mixed turns), compact, forward and answer recalls (loop.ts), and finish the turn. The Worker's
 * routes call it with the store and the runtime's fetch; it runs as well in one process, over a
 * `MemoryStore` and any `fetch`.
 */
import type { OffloadConfig, OffloadConfigPatch } from "../config.ts";
import { adapterFor, compact, splice } from "../core/compact.ts";
import type { AttachmentExtractor, Turn, TurnAsk } from "../core/ports.ts";
import { type PreparedRequest, prepareRequest, turnKeys } from "../core/prepare.ts";
import { memoAnchors, type SessionRef } from "../core/types.ts";
import { isOffloadError, type OffloadError } from "../errors.ts";
import {
  passThroughSummary,
  proxyPart,
  type Summary,
  summaryHeader,
  summaryOf,
} from "../http/summary.ts";
import type { Dialect } from "./dialect.ts";
import { dryRunTurn } from "./dry-run.ts";
import { clientHeaders, withAnthropicBeta } from "./headers.ts";
import { droppedResponse, proxyCall } from "./loop.ts";
import { failureName, memoAnswers } from "./memo-answers.ts";
import { signatureAnchor } from "./memo-splice.ts";
import type { ProxyMemo, ProxyStore } from "./port.ts";
import { countUnsent, countUrlOf } from "./token-count.ts";
import { send } from "./upstream.ts";

/**
 * The client's request body, read once: as it came to pass it through, or as text to compact it.
 */
export interface ClientBody {
  bytes(): Promise<BodyInit>;
  text(): Promise<string>;
}

export interface ProxyTurnInput {
  dialect: Dialect;
  /** The provider calls. */
  fetch: typeof fetch;
  /**
   * Where the call goes (the provider's base URL, the dialect's path, the client's query string).
   */
  url: string;
  /** The headers sent to the provider (the client's, without ours: headers.ts). */
  headers: Headers;
  body: ClientBody;
  ref: SessionRef;
  store: ProxyStore;
  /** The effective config, given the session's stored layer. */
  config: (sessionLayer: OffloadConfigPatch) => OffloadConfig;
  /** The secret that keys mem_ids: asked for only when the call compacts. */
  secret: () => string;
  /**
   * The attachment policy's extractor (documents stay native without one), or the extractor for
   * the call's effective config.
   */
  extractor?: AttachmentExtractor | ((config: OffloadConfig) => AttachmentExtractor) | undefined;
  /** Extra provider calls this call may make to answer recall_tool_result. */
  maxHops: number;
  /** Operator log lines (no bodies, no keys). */
  log: (line: string) => void;
  /**
   * A token count: the request is compacted exactly as the next real call would be, against a
   * turn that writes nothing (no turn is recorded), and the provider's answer is not watched.
   */
  dryRun?: boolean;
  /**
   * Whether the layers known before the session is asked turn compaction on (then the request is
   * read first); default: `config({})`'s answer.
   */
  readFirst?: boolean;
  /**
   * The fetch the provider's token counts go through (token-count.ts), default `fetch`: the in-process
   * path gives the app's own, so a count's failure is never taken for the call's.
   */
  countFetch?: typeof fetch;
}

export async function proxyTurn(input: ProxyTurnInput): Promise<Response> {
  const { dialect, store, ref } = input;
  // The text, once read, is what is sent (valid UTF-8 encodes back to the same bytes).
  let text: string | null = null;
  // Compaction off (or the session unreadable): the request goes out byte for byte, the answer
  // comes back as sent.
  const asIs = async (summary: Summary): Promise<Response> => {
    const sent = await send(
      input.fetch,
      input.url,
      input.headers,
      text ?? (await input.body.bytes()),
    );
    if (!sent.ok) return droppedResponse(dialect, sent.reason, summary);
    const res = sent.response;
    const out = clientHeaders(res.headers);
    const stream = (res.headers.get("content-type") ?? "").includes("text/event-stream");
    out.set("x-offload-summary", summaryHeader({ ...summary, proxy: proxyPart(stream, 0) }));
    return new Response(res.body, { status: res.status, headers: out });
  };
  const unavailable = (e: OffloadError) =>
    asIs({
      ...passThroughSummary(dialect.format),
      errors: [
        { code: "storage_error", message: `${e.message}; request passed through unchanged` },
      ],
      errors_total: 1,
    });

  // One round trip to the session before the provider is called: when the layers known before it
  // (the deployment's, the request's) turn compaction on, the request is read first, so the
  // session answers its config, the records and the memos the request is anchored on, at once. A
  // session that turns compaction on by its own layer alone is asked again once the request is
  // read (its first begin answered only the config).
  const begin = async (read: Read | null): Promise<Turn | Response> => {
    try {
      return await store.beginTurn(ref, askOf(read));
    } catch (e) {
      if (!isOffloadError(e) || e.type !== "storage_error") throw e;
      return unavailable(e);
    }
  };
  let read =
    (input.readFirst ?? input.config({}).tool_result_compaction_enabled)
      ? readRequest(dialect, (text = await input.body.text()))
      : null;
  let turn = await begin(read);
  if (turn instanceof Response) return turn;
  const config = input.config(turn.config);
  if (!config.tool_result_compaction_enabled) return asIs(passThroughSummary(dialect.format));
  if (read === null) {
    read = readRequest(dialect, (text = await input.body.text()));
    turn = await begin(read);
    if (turn instanceof Response) return turn;
  }
  if (read.unreadable !== null) throw read.unreadable;
  if (input.dryRun === true) turn = dryRunTurn(turn);

  const secret = input.secret();
  const spliced = await spliceMemos(input, read.text, turn.memos);
  const out = await compact({
    format: dialect.format,
    request: spliced.text,
    // Spliced memos changed the text: it is read again.
    prepared: spliced.spliced === 0 ? (read.prepared ?? undefined) : undefined,
    session: ref,
    config,
    turn,
    secret,
    extractor: typeof input.extractor === "function" ? input.extractor(config) : input.extractor,
    // The betas the report names go out with the call (below).
    sendsBetas: true,
  });
  // A stream that reports usage only when asked is asked (the client's stream stays as it asked).
  const ask =
    input.dryRun === true || read.prepared === null
      ? null
      : (dialect.askStreamUsage?.(read.prepared.root) ?? null);
  // The results stubbed on arrival, counted by the provider beside the call (token-count.ts).
  const counts =
    input.dryRun === true || !config.tool_result_count_unsent || read.prepared === null
      ? undefined
      : countUnsent({
          provider: dialect.provider,
          fetcher: input.countFetch ?? input.fetch,
          url: countUrlOf(input.url, dialect.path, dialect.provider, Date.now()),
          headers: input.headers,
          prepared: read.prepared,
          cut: out.report.estimate?.cut,
        });
  return proxyCall({
    dialect,
    fetcher: input.fetch,
    url: input.url,
    // The betas the request as compacted needs (the recall tool declared inline).
    headers: withAnthropicBeta(input.headers, out.report.anthropic_beta),
    request:
      ask === null
        ? out.request
        : out.request.slice(0, ask.at) + ask.text + out.request.slice(ask.at),
    hideUsage: ask !== null,
    // Only a tool we declared is ours to answer: a client that declares recall_tool_result itself
    // handles it. A count has no answer to watch.
    intercept: input.dryRun !== true && out.report.recall_tool === "added",
    maxHops: input.maxHops,
    store,
    turn,
    ref,
    params: {
      mode: config.tool_result_recall_mode,
      max_chars: config.tool_result_recall_max_chars,
      window: config.tool_result_recall_window_chars,
    },
    summary: {
      ...summaryOf(out.report, out.changed, turn.notes),
      proxy: proxyPart(false, spliced.spliced),
    },
    model: out.report.priced_as ?? out.report.model,
    estimate: out.report.estimate,
    ...(counts === undefined ? {} : { counts }),
  });
}

/** The client's request as read before the session is asked. */
interface Read {
  text: string;
  /** Null when the text is not JSON (a 400 once compaction is known to be on). */
  prepared: PreparedRequest | null;
  unreadable: unknown;
  /** Ids a memo may be anchored on. */
  anchors: string[];
}

function readRequest(dialect: Dialect, text: string): Read {
  const anchors = anchorIds(text, dialect.format);
  try {
    const prepared = prepareRequest(dialect.format, adapterFor(dialect.format), text);
    return { text, prepared, unreadable: null, anchors };
  } catch (e) {
    if (!isOffloadError(e) || e.type !== "invalid_json") throw e;
    return { text, prepared: null, unreadable: e, anchors };
  }
}

/** What the turn asks its session for: the request's records and memos, once it is read. */
function askOf(read: Read | null): TurnAsk {
  if (read === null) return { ids: [], names: [] };
  const keys = read.prepared === null ? { ids: [], names: [] } : turnKeys(read.prepared);
  return { ...keys, anchors: read.anchors };
}

/**
 * The ids a request names that a memo may be anchored on (one regex pass over the text each): ids, and
 * thinking blocks' signatures (a hop memo's anchor, memo-splice.ts).
 */
function anchorIds(text: string, format: Dialect["format"]): string[] {
  const ids = new Set<string>();
  for (const m of text.matchAll(
    /"(?:id|tool_use_id|tool_call_id|call_id|previous_response_id)"\s*:\s*"([^"\\]{1,256})"/g,
  ))
    ids.add(m[1]!);
  // Only Messages requests carry signed thinking blocks (a hop memo is Anthropic's).
  if (format === "anthropic")
    for (const m of text.matchAll(/"signature"\s*:\s*"([^"\\]{16,})"/g))
      ids.add(signatureAnchor(m[1]!));
  return [...ids];
}

/**
 * Replays the recall answers the session remembers for anchors this request carries, and splices
 * them in.
 */
async function spliceMemos(
  input: ProxyTurnInput,
  text: string,
  memos: readonly ProxyMemo[],
): Promise<{ text: string; spliced: number }> {
  const { dialect } = input;
  const mine = memos.filter((m) => m.format === dialect.format);
  if (mine.length === 0) return { text, spliced: 0 };
  // One regex pass collects the ids the request names, whatever the number of memos; only a request
  // that carries an anchor is scanned and spliced.
  const ids = new Set(anchorIds(text, dialect.format));
  const candidates = mine.filter((m) => memoAnchors(m).some((id) => ids.has(id)));
  if (candidates.length === 0) return { text, spliced: 0 };
  const answers = await memoAnswers(candidates, input);
  try {
    const { edits, spliced } = dialect.splice(text, candidates, answers);
    return edits.length === 0 ? { text, spliced: 0 } : { text: splice(text, edits), spliced };
  } catch (e) {
    // Malformed JSON: compaction reports it with its path. Anything else is ours: the request goes
    // as the client holds it rather than failing this and every later turn of the conversation.
    if (!isOffloadError(e) || (e.type !== "invalid_json" && e.type !== "invalid_request"))
      input.log(
        `[edge-offload] remembered recalls could not be spliced (${failureName(e)}); the request goes without them`,
      );
    return { text, spliced: 0 };
  }
}
