/**
 * Before/after for "Writing tools that don't flood the context": a tool that dumps 10,000 rows against one
 * that returns a page of 20 plus the count (`definePagedTool`), over the same multi-turn session, priced with
 * the project's own token estimates (src/core/tokens.ts) and price table (src/core/pricing.ts).
 *
 *   node bench/toolkit.ts [--turns N] [--rows N] [--extra-pages N]
 *
 * Method (every number below is computed in this run; nothing is measured against a live API):
 * - The tool result is the exact text each tool returns (`Tool.call(...).content`), tokens by
 *   `estimateTextTokens` (JSON at 2.7 chars/token). The declarations are the tools' real Anthropic
 *   definitions; system prompt, user turns and answers are fixed token counts, the same for both tools.
 * - Session, one request per model call: (1) the user asks, the model calls the tool; (2) the result comes
 *   back, the model answers; then N later turns (default: the project's horizon, 5), each a user message and
 *   an answer. The result is in the prompt of call 2 and of every one of the N later calls. The paged tool
 *   pays for `--extra-pages` (default 1) more round trips: the model asks for the next page before answering,
 *   so it re-reads the context one more time and carries 20 more rows.
 * - Uncached client: every call bills its whole prompt at the input rate. Cached client: an advancing
 *   breakpoint (Anthropic, 5-minute TTL, turns within the TTL): each call reads from cache what the previous
 *   call wrote and writes the rest (the new messages, the previous answer) at the 5-minute write rate.
 * - Output tokens bill at the output rate; long-context rates via `ratesFor` (none apply to these models).
 * - A prompt beyond the model's context window is flagged (the provider would reject it); it is still
 *   priced, so the row reads as what the dump would cost on a model that could take it.
 */
import { z } from "zod";
import { DEFAULT_CONFIG } from "../src/config.ts";
import { type ModelPrice, ratesFor, resolveModel, usd } from "../src/core/pricing.ts";
import { formatInt } from "../src/core/text.ts";
import { estimateTextTokens } from "../src/core/tokens.ts";
import { definePagedTool, defineTool } from "../src/toolkit/entry.ts";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`--${name} must be a non-negative integer`);
  return value;
}

const ROWS = arg("rows", 10_000);
const TURNS = arg("turns", DEFAULT_CONFIG.tool_result_offload_horizon_default);
const EXTRA_PAGES = arg("extra-pages", 1);

/** Tokens of the parts both variants share (typical agent sizes; they only set the baseline the ratio is taken against). */
const SYSTEM_TOKENS = 2_000;
const USER_TOKENS = 60;
const ANSWER_TOKENS = 250;
const TOOL_CALL_TOKENS = 40;

/** Context windows, from the providers' model pages (Opus 4.5: 200K; Sonnet 4.6: 1M at standard rates). */
const MODELS: { id: string; window: number }[] = [
  { id: "claude-sonnet-4-6", window: 1_000_000 },
  { id: "claude-opus-4-5", window: 200_000 },
];

// A catalog like the example's (examples/catalog), grown to ROWS rows, deterministic.
const CATEGORIES = ["kitchen", "outdoor", "office", "garden", "audio"];
const NOUNS = [
  "chef knife",
  "tent",
  "desk lamp",
  "watering can",
  "headphones",
  "saucepan",
  "headlamp",
  "notebook",
  "planter",
  "speaker",
];
const ADJECTIVES = ["Steel", "Bamboo", "Compact", "Pro", "Classic", "Travel", "Heavy-duty", "Eco"];
const catalog = Array.from({ length: ROWS }, (_, i) => {
  const id = i + 1;
  const category = CATEGORIES[id % CATEGORIES.length]!;
  return {
    id,
    sku: `${category.slice(0, 3).toUpperCase()}-${String(id).padStart(5, "0")}`,
    name: `${ADJECTIVES[(id * 7) % ADJECTIVES.length]} ${NOUNS[(id * 3) % NOUNS.length]}`,
    category,
    price: Math.round((5 + ((id * 37) % 240) + ((id * 13) % 100) / 100) * 100) / 100,
    in_stock: (id * 11) % 7 !== 0,
    rating: Math.round((3 + ((id * 17) % 21) / 10) * 10) / 10,
  };
});

const input = z.object({
  query: z.string().default("").describe("Words in the product name; empty matches all."),
});
const dump = defineTool({
  name: "list_products",
  description: "List every product in the catalog.",
  input,
  run: () => catalog,
});
const paged = definePagedTool({
  name: "search_products",
  description: "Search the product catalog.",
  input,
  rows: () => catalog,
});

interface Call {
  /** Prompt tokens of this call. */
  prompt: number;
  output: number;
}

/** The calls of one session, each with its prompt size (the conversation grows by what the previous call added). */
function session(declarationTokens: number, resultTokens: number[], laterTurns: number): Call[] {
  const calls: Call[] = [];
  let context = SYSTEM_TOKENS + declarationTokens + USER_TOKENS;
  // Every result but the last is followed by another tool call (the model paging on).
  resultTokens.forEach((result) => {
    calls.push({ prompt: context, output: TOOL_CALL_TOKENS });
    context += TOOL_CALL_TOKENS + result;
  });
  calls.push({ prompt: context, output: ANSWER_TOKENS });
  context += ANSWER_TOKENS;
  for (let t = 0; t < laterTurns; t++) {
    context += USER_TOKENS;
    calls.push({ prompt: context, output: ANSWER_TOKENS });
    context += ANSWER_TOKENS;
  }
  return calls;
}

interface Bill {
  usd: number;
  prompt_tokens: number;
  largest_prompt: number;
}

function bill(calls: readonly Call[], price: ModelPrice, cached: boolean): Bill {
  let total = 0;
  let prompts = 0;
  let written = 0; // prefix in cache, written by the previous call
  for (const call of calls) {
    const rates = ratesFor(price, call.prompt);
    if (cached)
      total += usd(written, rates.cache_read) + usd(call.prompt - written, rates.cache_write_5m);
    else total += usd(call.prompt, rates.input);
    total += usd(call.output, rates.output);
    prompts += call.prompt;
    written = call.prompt;
  }
  return {
    usd: total,
    prompt_tokens: prompts,
    largest_prompt: Math.max(...calls.map((c) => c.prompt)),
  };
}

const dumpAnswer = await dump.call({});
const pageAnswers = [];
for (let page = 0, offset: number | null = 0; page <= EXTRA_PAGES && offset !== null; page++) {
  const answer = await paged.call({ offset });
  pageAnswers.push(answer);
  offset = (answer.value as { next_offset: number | null }).next_offset;
}
if (dumpAnswer.is_error || pageAnswers.some((a) => a.is_error)) throw new Error("a tool failed");

const dumpTokens = estimateTextTokens(dumpAnswer.content);
const pageTokens = pageAnswers.map((a) => estimateTextTokens(a.content));
const declTokens = (tool: { definition(): unknown }) =>
  estimateTextTokens(JSON.stringify(tool.definition()));
const before = session(declTokens(dump), [dumpTokens], TURNS);
const after = session(declTokens(paged), pageTokens, TURNS);

const money = (x: number) => `$${x.toFixed(x < 1 ? 4 : 2)}`;
const pad = (s: string, n: number) => s.padEnd(n);
const lpad = (s: string, n: number) => s.padStart(n);

console.log(
  `Tool result: dump of ${formatInt(ROWS)} rows = ${formatInt(dumpAnswer.content.length)} chars ≈ ${formatInt(dumpTokens)} tokens;`,
);
console.log(
  `             page of 20 + count = ${formatInt(pageAnswers[0]!.content.length)} chars ≈ ${formatInt(pageTokens[0]!)} tokens (×${pageAnswers.length} pages read) — ${(dumpTokens / pageTokens[0]!).toFixed(0)}× smaller.`,
);
console.log(
  `Session: tool call, result, answer, then ${TURNS} later turns (result re-sent on each); paged: +${pageAnswers.length - 1} page round trip(s).`,
);
console.log(
  `Calls: dump ${before.length}, paged ${after.length}. Shared context: system ${formatInt(SYSTEM_TOKENS)}, user ${USER_TOKENS}/turn, answer ${ANSWER_TOKENS}/turn.\n`,
);

const header = `${pad("model", 18)}${pad("client", 10)}${lpad("dump", 11)}${lpad("paged", 11)}${lpad("ratio", 8)}${lpad("saved", 11)}${lpad("prompt tok dump", 17)}${lpad("paged", 10)}  note`;
console.log(header);
console.log("-".repeat(header.length + 10));
const results: Record<string, unknown>[] = [];
for (const { id, window } of MODELS) {
  const price = resolveModel(id)!;
  for (const cached of [true, false]) {
    const b = bill(before, price, cached);
    const a = bill(after, price, cached);
    const note =
      b.largest_prompt > window
        ? `dump prompt ${formatInt(b.largest_prompt)} > ${formatInt(window)} window: rejected by the API`
        : "";
    console.log(
      `${pad(id, 18)}${pad(cached ? "cached" : "uncached", 10)}${lpad(money(b.usd), 11)}${lpad(money(a.usd), 11)}${lpad(`${(b.usd / a.usd).toFixed(1)}×`, 8)}${lpad(money(b.usd - a.usd), 11)}${lpad(formatInt(b.prompt_tokens), 17)}${lpad(formatInt(a.prompt_tokens), 10)}  ${note}`,
    );
    results.push({
      model: id,
      cached,
      turns: TURNS,
      dump_usd: b.usd,
      paged_usd: a.usd,
      ratio: b.usd / a.usd,
      dump_prompt_tokens: b.prompt_tokens,
      paged_prompt_tokens: a.prompt_tokens,
      over_window: b.largest_prompt > window,
    });
  }
}

console.log(`\nBy number of later turns (dump $ / paged $, ratio):`);
const turnsList = [0, 1, 5, 10, 20];
console.log(
  `${pad("model", 18)}${pad("client", 10)}${turnsList.map((n) => lpad(`N=${n}`, 24)).join("")}`,
);
for (const { id } of MODELS) {
  const price = resolveModel(id)!;
  for (const cached of [true, false]) {
    const cells = turnsList.map((n) => {
      const b = bill(session(declTokens(dump), [dumpTokens], n), price, cached).usd;
      const a = bill(session(declTokens(paged), pageTokens, n), price, cached).usd;
      return lpad(`${money(b)} / ${money(a)} ${(b / a).toFixed(0)}×`, 24);
    });
    console.log(`${pad(id, 18)}${pad(cached ? "cached" : "uncached", 10)}${cells.join("")}`);
  }
}

if (process.argv.includes("--json"))
  console.log(
    JSON.stringify(
      { rows: ROWS, turns: TURNS, dump_tokens: dumpTokens, page_tokens: pageTokens, results },
      null,
      2,
    ),
  );

// Cross-check with the cost replay (src/replay): the same two sessions as real messages, priced by the replay's
// own cache simulation, also under edge-offload (whose first-delivery row is what offload can do about a dump).
{
  const { replay } = await import("../src/replay/run.ts");
  const { policyByName } = await import("../src/replay/policies/index.ts");
  const filler = (n: number) => "x ".repeat(n * 2).trim(); // ~n tokens of prose-like text
  const asSession = (
    id: string,
    toolName: string,
    results: string[],
  ): import("../src/replay/types.ts").ReplaySession => {
    const messages: import("../src/replay/types.ts").Message[] = [
      { role: "user", content: `Find a good desk lamp. ${filler(USER_TOKENS)}` },
    ];
    results.forEach((content, i) => {
      messages.push({
        role: "assistant",
        content: [
          {
            type: "tool_use",
            id: `${id}_${i}`,
            name: toolName,
            input: { query: "", offset: i * 20 },
          },
        ],
      });
      messages.push({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `${id}_${i}`, content }],
      });
    });
    messages.push({ role: "assistant", content: [{ type: "text", text: filler(ANSWER_TOKENS) }] });
    for (let t = 0; t < TURNS; t++)
      messages.push(
        { role: "user", content: filler(USER_TOKENS) },
        { role: "assistant", content: [{ type: "text", text: filler(ANSWER_TOKENS) }] },
      );
    return {
      id,
      system: filler(SYSTEM_TOKENS),
      messages,
      calls: messages.flatMap((m, i) => (m.role === "assistant" ? [i] : [])),
    };
  };
  const sessions = {
    dump: asSession("dump", "list_products", [dumpAnswer.content]),
    paged: asSession(
      "paged",
      "search_products",
      pageAnswers.map((a) => a.content),
    ),
  };
  console.log(`\nCross-check with the replay (src/replay, its own cache simulation), Sonnet 4.6:`);
  console.log(
    `${pad("session", 10)}${pad("client", 10)}${lpad("none", 11)}${lpad("full delivery", 14)}${lpad("edge-offload", 17)}${lpad("prompt tokens", 15)}`,
  );
  for (const client of ["cached", "uncached"] as const) {
    for (const [name, s] of Object.entries(sessions)) {
      const r = await replay([s], {
        model: "claude-sonnet-4-6",
        client,
        policies: ["none", "edge-offload/full-delivery", "edge-offload"].map(
          (n) => policyByName(n)!,
        ),
      });
      const [none, ours, first] = r.policies;
      console.log(
        `${pad(name, 10)}${pad(client, 10)}${lpad(money(none!.total_usd), 11)}${lpad(money(ours!.total_usd), 14)}${lpad(money(first!.total_usd), 17)}${lpad(formatInt(none!.prompt_tokens), 15)}`,
      );
    }
  }
}
