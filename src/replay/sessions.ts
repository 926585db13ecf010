/**
 * Reading what a user replays: sessions in the corpus format (`{id, system, tools?, messages, refs?}` per line;
 * each assistant message is one call) or a plain Anthropic request log (one request per line; consecutive
 * requests that extend each other form one session, each line one call). A log line's `timestamp` (or
 * `created_at`: epoch seconds or ms, or an ISO date) times its call, when every line of the session has one.
 */
import { OffloadError } from "../errors.ts";
import { timestampOf } from "./gaps.ts";
import type { Message, ReplaySession } from "./types.ts";

function isMessageList(v: unknown): v is Message[] {
  return (
    Array.isArray(v) &&
    v.every(
      (m) =>
        typeof m === "object" &&
        m !== null &&
        ((m as Message).role === "user" || (m as Message).role === "assistant"),
    )
  );
}

function assistantCalls(messages: Message[]): number[] {
  return messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
}

/** Messages a extends b: b's messages are a's first ones (same JSON). */
function extendsPrefix(longer: Message[], shorter: Message[]): boolean {
  if (longer.length < shorter.length) return false;
  for (let i = 0; i < shorter.length; i++)
    if (JSON.stringify(longer[i]) !== JSON.stringify(shorter[i])) return false;
  return true;
}

/**
 * The sessions of a JSONL text in either format (see above); `name` names the input in errors. A line that
 * is not JSON, or has no `messages` array of user/assistant messages, is an OffloadError naming the line.
 */
export function parseSessions(text: string, name = "input"): ReplaySession[] {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const sessions: ReplaySession[] = [];
  let log: {
    id: string;
    system?: unknown;
    tools?: unknown[];
    requests: Message[][];
    times: (number | null)[];
  } | null = null;
  const flush = () => {
    if (log === null) return;
    const messages = log.requests[log.requests.length - 1]!;
    const times = log.times.every((t) => t !== null) ? (log.times as number[]) : undefined;
    sessions.push({
      ...(times === undefined ? {} : { times }),
      id: log.id,
      system: log.system,
      ...(log.tools === undefined ? {} : { tools: log.tools }),
      messages,
      calls: log.requests.map((r) => r.length),
    });
    log = null;
  };
  lines.forEach((line, i) => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new OffloadError("invalid_json", `${name}: line ${i + 1} is not JSON`);
    }
    if (
      typeof value !== "object" ||
      value === null ||
      !isMessageList((value as { messages?: unknown }).messages)
    ) {
      throw new OffloadError(
        "invalid_request",
        `${name}: line ${i + 1} has no "messages" array of user/assistant messages`,
      );
    }
    const v = value as {
      id?: unknown;
      system?: unknown;
      tools?: unknown[];
      messages: Message[];
      refs?: ReplaySession["refs"];
      model?: unknown;
      timestamp?: unknown;
      created_at?: unknown;
    };
    const at = timestampOf(v.timestamp ?? v.created_at);
    if (typeof v.id === "string" && v.model === undefined) {
      flush();
      sessions.push({
        id: v.id,
        system: v.system,
        ...(v.tools === undefined ? {} : { tools: v.tools }),
        messages: v.messages,
        calls: assistantCalls(v.messages),
        ...(v.refs === undefined ? {} : { refs: v.refs }),
      });
      return;
    }
    // A request log line: continue the current session when it extends the previous request.
    if (log !== null && extendsPrefix(v.messages, log.requests[log.requests.length - 1]!)) {
      log.requests.push(v.messages);
      log.times.push(at);
    } else {
      flush();
      log = {
        id: `${name}#${i + 1}`,
        system: v.system,
        ...(v.tools === undefined ? {} : { tools: v.tools }),
        requests: [v.messages],
        times: [at],
      };
    }
  });
  flush();
  return sessions;
}
