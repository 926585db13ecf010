/**
 * Synthetic traces of the requests real coding agents send (recorded against the scripted fake model by
 * test/agents/record-traces.ts): the shapes, not the text. A trace keeps every request's structure, field
 * names, roles, block and item types, tool names, ids, cache markers, numbers and short identifier-like strings;
 * every other string (prompts, tool descriptions, tool results, file paths, commands) becomes a marker with its
 * length and line count, which `expandTrace` turns back into filler text of exactly that length and number of
 * lines. So the fixtures reproduce the sizes of tools, system prompt and results, the cache breakpoints and the
 * agents' own output caps, without carrying the agents' proprietary prompt text.
 *
 * File format (test/fixtures/agent-traces/<agent>.json):
 *
 *   { agent, version, format, default_model, recorded: how, notes: [...],
 *     requests: [ { method, path, phase, headers, stats, body } ] }
 *
 * `body` is a skeleton: JSON where a string was replaced by `{"$text": chars, "lines": n}`; a top-level field
 * whose skeleton equals the previous request's is `{"$prev": true}`; and the `messages` / `input` array may be
 * `{"$prev_items": k, "items": [...]}`: the previous request's first k items, then these. `stats` are measured
 * on the real request (sizes in chars of the decoded strings, as the transform sees them).
 */
import { readFileSync } from "node:fs";
import { adapterFor } from "../../src/core/compact.ts";
import { decodeString, parseJsonSpans } from "../../src/core/json/scan.ts";

export interface TraceStats {
  /** The request body, in chars. */
  body_chars: number;
  /** Tool declarations: how many, and their JSON size (top level and Responses `additional_tools`). */
  tools: number;
  tools_chars: number;
  /** System prompt: `system`, `instructions`, and system / developer messages, in chars of JSON. */
  system_chars: number;
  /** Messages (Anthropic, Chat) or input items (Responses). */
  items: number;
  /** Content block / item types and how many of each. */
  types: Record<string, number>;
  /** Explicit cache breakpoints (`cache_control`, `prompt_cache_breakpoint`), by where they are. */
  breakpoints: string[];
  /** Every tool result: the tool, its text chars and lines (decoded), in request order. */
  results: { tool: string; chars: number; lines: number }[];
}

export interface TraceRequest {
  method: string;
  path: string;
  /** What the fake model did with it ("Bash", "Read", "exec", "count_tokens", "final"…). */
  phase: string;
  /** The agent's non-secret protocol headers (betas, version, user agent). */
  headers: Record<string, string>;
  stats: TraceStats;
  body: unknown;
}

export interface AgentTrace {
  agent: string;
  version: string;
  format: "anthropic" | "openai-responses";
  default_model: string;
  recorded: string;
  notes: string[];
  requests: TraceRequest[];
}

/** Strings kept as they are: identifiers, types, enum values, ids (no spaces, at most 40 chars). */
const KEEP = /^[A-Za-z0-9_.:@/+-]{0,40}$/;

export type Marker = { $text: number; lines: number };

function isMarker(v: unknown): v is Marker {
  return typeof v === "object" && v !== null && "$text" in v && "lines" in v;
}

/** The skeleton of a JSON value: long or prose-like strings become markers. */
export function skeletonOf(value: unknown): unknown {
  if (typeof value === "string")
    return KEEP.test(value) ? value : { $text: value.length, lines: value.split("\n").length };
  if (Array.isArray(value)) return value.map(skeletonOf);
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, skeletonOf(v)]));
  return value;
}

const WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"];

/** Deterministic filler of exactly `chars` chars in `lines` lines (fewer lines if chars cannot hold them). */
export function filler(chars: number, lines: number): string {
  const n = Math.max(1, Math.min(lines, Math.floor((chars + 1) / 2)));
  const textChars = chars - (n - 1);
  const out: string[] = [];
  let word = 0;
  for (let i = 0; i < n; i++) {
    const len = Math.floor(textChars / n) + (i < textChars % n ? 1 : 0);
    let line = "";
    while (line.length < len) {
      line += `${line === "" ? "" : " "}${WORDS[word++ % WORDS.length]}`;
    }
    out.push(line.slice(0, len));
  }
  return out.join("\n");
}

function expandValue(value: unknown): unknown {
  if (isMarker(value)) return filler(value.$text, value.lines);
  if (Array.isArray(value)) return value.map(expandValue);
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandValue(v)]));
  return value;
}

const ITEM_KEYS = ["messages", "input"];

/** Skeletons of successive requests, each stored as the difference from the one before. */
export function compress(bodies: readonly unknown[]): unknown[] {
  let previous: Record<string, unknown> | null = null;
  return bodies.map((raw) => {
    const body = skeletonOf(raw) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(body)) {
      const before = previous?.[key];
      if (before !== undefined && JSON.stringify(before) === JSON.stringify(value)) {
        out[key] = { $prev: true };
      } else if (ITEM_KEYS.includes(key) && Array.isArray(value) && Array.isArray(before)) {
        let k = 0;
        while (
          k < value.length &&
          k < before.length &&
          JSON.stringify(value[k]) === JSON.stringify(before[k])
        )
          k++;
        out[key] = k === 0 ? value : { $prev_items: k, items: value.slice(k) };
      } else out[key] = value;
    }
    previous = body;
    return out;
  });
}

/** The skeletons back, each whole (the inverse of `compress`, markers kept). */
export function decompress(bodies: readonly unknown[]): Record<string, unknown>[] {
  let previous: Record<string, unknown> = {};
  return bodies.map((stored) => {
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(stored as Record<string, unknown>)) {
      const v = value as Record<string, unknown> | null;
      if (v !== null && typeof v === "object" && v.$prev === true) body[key] = previous[key];
      else if (v !== null && typeof v === "object" && typeof v.$prev_items === "number")
        body[key] = [
          ...(previous[key] as unknown[]).slice(0, v.$prev_items),
          ...(v.items as unknown[]),
        ];
      else body[key] = value;
    }
    previous = body;
    return body;
  });
}

/** The trace's requests as JSON texts a client could send (filler in place of the agents' text). */
export function expandTrace(trace: AgentTrace): string[] {
  return decompress(trace.requests.map((r) => r.body)).map((b) => JSON.stringify(expandValue(b)));
}

export function loadTrace(name: "claude-code" | "codex"): AgentTrace {
  return JSON.parse(
    readFileSync(new URL(`../fixtures/agent-traces/${name}.json`, import.meta.url), "utf8"),
  ) as AgentTrace;
}

// ---------------------------------------------------------------- stats of a request

const size = (v: unknown) => (v === undefined ? 0 : JSON.stringify(v).length);

function countTypes(items: unknown[], types: Record<string, number>): void {
  for (const item of items) {
    if (typeof item !== "object" || item === null) continue;
    const rec = item as Record<string, unknown>;
    const key =
      typeof rec.type === "string"
        ? rec.type
        : typeof rec.role === "string"
          ? `message:${rec.role}`
          : "?";
    types[key] = (types[key] ?? 0) + 1;
    if (key === "message" || key.startsWith("message:") || rec.role !== undefined) {
      if (Array.isArray(rec.content)) countTypes(rec.content, types);
    }
  }
}

/** Paths of the explicit cache markers in a JSON value. */
function markers(value: unknown, path: string, out: string[]): void {
  if (Array.isArray(value)) value.forEach((v, i) => markers(v, `${path}[${i}]`, out));
  else if (typeof value === "object" && value !== null)
    for (const [k, v] of Object.entries(value)) {
      if ((k === "cache_control" || k === "prompt_cache_breakpoint") && v !== null)
        out.push(path === "" ? k : `${path}`);
      else markers(v, path === "" ? k : `${path}.${k}`, out);
    }
}

/**
 * The shape of one request, measured on its text: sizes of tools and system prompt, block types, cache
 * breakpoints and tool results (read with the transform's own adapters: what edge-offload sees).
 */
export function traceStats(format: "anthropic" | "openai-responses", raw: string): TraceStats {
  const json = JSON.parse(raw) as Record<string, any>;
  const items: unknown[] = (format === "anthropic" ? json.messages : json.input) ?? [];
  const additional = Array.isArray(json.input)
    ? json.input.filter((i: any) => i?.type === "additional_tools")
    : [];
  const systemMessages = items.filter(
    (m: any) => (m?.role === "system" || m?.role === "developer") && m?.type !== "additional_tools",
  );
  const types: Record<string, number> = {};
  countTypes(items, types);
  const breakpoints: string[] = [];
  markers(json, "", breakpoints);
  let results: TraceStats["results"] = [];
  if (Array.isArray(items) && items.length > 0) {
    const analysis = adapterFor(format).analyze(raw, parseJsonSpans(raw));
    results = analysis.sites.map((s) => {
      const text = s.texts.map((t) => decodeString(raw, t)).join("");
      return { tool: s.tool_name, chars: text.length, lines: text.split("\n").length };
    });
  }
  return {
    body_chars: raw.length,
    tools:
      (json.tools?.length ?? 0) +
      additional.reduce(
        (n: number, a: any) =>
          n +
          (a.tools ?? []).reduce(
            (m: number, t: any) => m + (t.type === "namespace" ? (t.tools?.length ?? 0) : 1),
            0,
          ),
        0,
      ),
    tools_chars: size(json.tools) + additional.reduce((n: number, a: unknown) => n + size(a), 0),
    system_chars:
      size(json.system) +
      size(json.instructions) +
      systemMessages.reduce((n: number, m) => n + size(m), 0),
    items: items.length,
    types,
    breakpoints,
    results,
  };
}
