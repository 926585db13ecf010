// `npm run try`: the README's quick start. With the Worker running (`npm start`), one agent turn goes through
// its compact route twice: first as a session nobody configured gets it (the shipped default: shadow, what
// it would save and why, the request unchanged), then after the one line that turns it live (a stub in the
// request, its body recalled by a JSON path). The session is deleted first and last, so every run prints the
// same. BASE (default http://127.0.0.1:$PORT or :8787) and OFFLOAD_KEY (default: the key `npm start` writes
// into .dev.vars) say where and as whom.
import { existsSync, readFileSync } from "node:fs";

const base = process.env.BASE ?? `http://127.0.0.1:${process.env.PORT || 8787}`;
const key = process.env.OFFLOAD_KEY ?? localKey();
const session = "quickstart";
const at = `${base}/v1/sessions/${session}`;
const auth = { authorization: `Bearer ${key}` };

/** The first key of .dev.vars (or .dev.vars.example), as `npm start` serves it. */
function localKey() {
  for (const file of [".dev.vars", ".dev.vars.example"]) {
    if (!existsSync(file)) continue;
    const line = /^OFFLOAD_API_KEYS=(.*)$/m.exec(readFileSync(file, "utf8"))?.[1];
    const first = line?.split(",")[0]?.split(":")[1];
    if (first) return first.trim();
  }
  return "sk-local-dev-key-1234";
}

/** An Anthropic request whose first tool result is ~65 KB of JSON, settled (the model answered after it). */
function turn() {
  const items = Array.from({ length: 1500 }, (_, i) => ({
    id: i,
    name: `item-${i}`,
    price: i * 1.5,
  }));
  return JSON.stringify({
    model: "claude-opus-4-5",
    max_tokens: 1024,
    messages: [
      { role: "user", content: "Load the catalog, then check the status." },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "dump", input: {} }],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: JSON.stringify({ items }) },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_2", name: "status", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }] },
    ],
  });
}

async function call(method, url, body) {
  const res = await fetch(url, {
    method,
    headers: { ...auth, "content-type": "application/json" },
    ...(body === undefined ? {} : { body }),
  });
  if (!res.ok && res.status !== 404) {
    const text = await res.text();
    throw new Error(`${method} ${url.replace(base, "")}: ${res.status} ${text.slice(0, 300)}`);
  }
  return res;
}

const usd = (x) => `$${x.toFixed(4)}`;
const size = (n) => n.toLocaleString("en-US");

async function compact(request) {
  const res = await call("POST", `${at}/compact?format=anthropic`, request);
  return { out: await res.text(), summary: JSON.parse(res.headers.get("x-offload-summary")) };
}

try {
  await fetch(`${base}/healthz`);
} catch {
  console.error(`edge-offload: nothing answers at ${base}; start it first with \`npm start\``);
  process.exit(1);
}
await call("DELETE", at);
const request = turn();
console.log(`edge-offload at ${base}, session "${session}" (no config of its own)`);
console.log(`1. compact a turn whose first tool result is ${size(64550)} chars of JSON:`);
const first = await compact(request);
console.log(`   ${first.summary.note}`);
console.log(`   request sent unchanged: ${first.out === request}`);
const shadowed = await (await call("GET", `${at}/report`)).json();
for (const d of shadowed.last_turn.decisions)
  console.log(`   ${d.tool_use_id} (${d.tool_name}): ${d.action}, ${d.reason}`);

console.log('2. go live for this session: PUT config {"tool_result_offload_shadow":false}');
await call("PUT", `${at}/config`, JSON.stringify({ tool_result_offload_shadow: false }));

const live = await compact(request);
const s = live.summary;
console.log(
  `3. the same turn again: ${size(request.length)} bytes in, ${size(live.out.length)} out (~${size(s.tokens_before)} → ${size(s.tokens_after)} tokens), saved ${usd(s.saved_usd)}`,
);
const stub = JSON.parse(live.out).messages[2].content[0].content;
const text = typeof stub === "string" ? stub : stub.map((b) => b.text).join("\n");
for (const line of text.split("\n").slice(0, 3)) console.log(`   | ${line}`);
const memId = /trm_[0-9a-f]{24}/.exec(text)[0];

const recalled = await (
  await call("POST", `${at}/recall`, JSON.stringify({ mem_id: memId, json_path: "items[1499]" }))
).json();
console.log(`4. the model recalls items[1499]: ${recalled.content.split("\n").slice(1).join("")}`);

const deleted = await call("DELETE", at);
console.log(`5. DELETE the session (state, bodies, index): ${deleted.status}`);
