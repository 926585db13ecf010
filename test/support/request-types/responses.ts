/**
 * One OpenAI Responses request per documented input item type, message role, content part, tool type and
 * top-level field, typed against the `openai` SDK: the mapped types below fail to compile when the SDK gains a
 * member that has no case here.
 */
import type OpenAI from "openai";
import { BIG, casesOf, type FormatCases, fieldCases } from "./shared.ts";

type Item = OpenAI.Responses.ResponseInputItem;
type ItemType = NonNullable<Item["type"]>;
type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming;
type Tool = OpenAI.Responses.Tool;
type ToolType = Tool["type"];
type Req = Omit<Params, "input"> & { input: Item[] };

function base(): Req {
  return {
    model: "gpt-4.1",
    store: false,
    instructions: "You are a careful agent.",
    tools: [
      { type: "function", name: "dump", parameters: { type: "object" }, strict: false },
      { type: "function", name: "status", parameters: { type: "object" }, strict: false },
    ],
    input: [
      { role: "user", content: [{ type: "input_text", text: "Load the catalog." }] },
      { type: "function_call", call_id: "t1", name: "dump", arguments: "{}" },
      { type: "function_call_output", call_id: "t1", output: BIG },
      { type: "function_call", call_id: "t2", name: "status", arguments: "{}" },
      { type: "function_call_output", call_id: "t2", output: "ok" },
    ],
  };
}

/** Where an item goes: after the large result, before the call that settles it (index 3). */
function insert(...items: Item[]): (req: Req) => void {
  return (req) => req.input.splice(3, 0, ...items);
}

const PNG = "data:image/png;base64,iVBORw0KGgo=";

/** The items of each type (with the partner an output needs), inserted into the base conversation. */
const ITEMS: { [K in ItemType]: (req: Req) => void } = {
  message: insert(
    { type: "message", role: "developer", content: [{ type: "input_text", text: "Be brief." }] },
    {
      type: "message",
      id: "msg_a1",
      role: "assistant",
      status: "completed",
      content: [
        { type: "output_text", text: "Looking.", annotations: [] },
        { type: "refusal", refusal: "I will not do that part." },
      ],
    },
  ),
  file_search_call: insert({
    type: "file_search_call",
    id: "fs_1",
    queries: ["price list"],
    status: "completed",
    results: [{ file_id: "file_1", filename: "prices.txt", score: 0.9, text: "item-1 1.50" }],
  }),
  computer_call: insert(
    {
      type: "computer_call",
      id: "cu_1",
      call_id: "cc_1",
      pending_safety_checks: [],
      status: "completed",
      action: { type: "screenshot" },
    },
    {
      type: "computer_call_output",
      call_id: "cc_1",
      output: { type: "computer_screenshot", image_url: PNG },
    },
  ),
  computer_call_output: insert(
    {
      type: "computer_call",
      id: "cu_2",
      call_id: "cc_2",
      pending_safety_checks: [],
      status: "completed",
      action: { type: "click", button: "left", x: 1, y: 2 },
    },
    {
      type: "computer_call_output",
      id: "cuo_2",
      call_id: "cc_2",
      output: { type: "computer_screenshot", file_id: "file_2" },
      acknowledged_safety_checks: [],
      status: "completed",
    },
  ),
  web_search_call: insert({
    type: "web_search_call",
    id: "ws_1",
    status: "completed",
    action: { type: "search", query: "catalog prices" },
  }),
  function_call: insert(
    { type: "function_call", id: "fc_3", call_id: "t3", name: "status", arguments: '{"x":1}' },
    {
      type: "function_call_output",
      call_id: "t3",
      output: [
        { type: "input_text", text: "status: ok" },
        { type: "input_image", detail: "low", image_url: PNG },
        { type: "input_file", filename: "a.txt", file_data: "data:text/plain;base64,aGk=" },
      ],
    },
  ),
  function_call_output: insert(
    { type: "function_call", call_id: "t4", name: "status", arguments: "{" },
    {
      type: "function_call_output",
      id: "fco_4",
      call_id: "t4",
      output: "bad args",
      status: "completed",
    },
  ),
  tool_search_call: insert(
    { type: "tool_search_call", call_id: "ts_1", arguments: { query: "pdf" }, execution: "client" },
    {
      type: "tool_search_output",
      call_id: "ts_1",
      execution: "client",
      tools: [
        { type: "function", name: "read_pdf", parameters: { type: "object" }, strict: false },
      ],
    },
  ),
  tool_search_output: insert({
    type: "tool_search_output",
    id: "tso_1",
    execution: "server",
    status: "completed",
    tools: [{ type: "function", name: "grep", parameters: null, strict: null }],
  }),
  additional_tools: insert({
    type: "additional_tools",
    role: "developer",
    tools: [
      {
        type: "namespace",
        name: "functions",
        description: "",
        tools: [{ type: "custom", name: "exec", description: "Run JavaScript" }],
      },
    ],
  }),
  configuration_update: insert({
    type: "configuration_update",
    reasoning: { effort: "high" },
  }),
  reasoning: insert({
    type: "reasoning",
    id: "rs_1",
    summary: [{ type: "summary_text", text: "Thinking about prices." }],
    encrypted_content: "gAAAAB-opaque",
  }),
  compaction: (req) =>
    req.input.unshift({ type: "compaction", id: "cmp_1", encrypted_content: "gAAAAB-summary" }),
  image_generation_call: insert({
    type: "image_generation_call",
    id: "ig_1",
    result: "iVBORw0KGgo=",
    status: "completed",
  }),
  code_interpreter_call: insert({
    type: "code_interpreter_call",
    id: "ci_1",
    code: "print(1)",
    container_id: "cntr_1",
    outputs: [{ type: "logs", logs: "1" }],
    status: "completed",
  }),
  local_shell_call: insert(
    {
      type: "local_shell_call",
      id: "ls_1",
      call_id: "lsc_1",
      status: "completed",
      action: { type: "exec", command: ["ls"], env: {} },
    },
    { type: "local_shell_call_output", id: "lsc_1", output: "catalog.txt" },
  ),
  local_shell_call_output: insert(
    {
      type: "local_shell_call",
      id: "ls_2",
      call_id: "lsc_2",
      status: "completed",
      action: { type: "exec", command: ["pwd"], env: { HOME: "/root" }, timeout_ms: 1000 },
    },
    { type: "local_shell_call_output", id: "lsc_2", output: "/work", status: "completed" },
  ),
  shell_call: insert(
    { type: "shell_call", call_id: "sh_1", action: { commands: ["cat notes.txt"] } },
    {
      type: "shell_call_output",
      call_id: "sh_1",
      output: [{ stdout: "notes", stderr: "", outcome: { type: "exit", exit_code: 0 } }],
    },
  ),
  shell_call_output: insert(
    { type: "shell_call", id: "shc_2", call_id: "sh_2", action: { commands: ["sleep 99"] } },
    {
      type: "shell_call_output",
      call_id: "sh_2",
      max_output_length: 1000,
      output: [{ stdout: "", stderr: "", outcome: { type: "timeout" } }],
    },
  ),
  apply_patch_call: insert(
    {
      type: "apply_patch_call",
      call_id: "ap_1",
      status: "completed",
      operation: { type: "update_file", path: "a.txt", diff: "@@\n-a\n+b\n" },
    },
    { type: "apply_patch_call_output", call_id: "ap_1", status: "completed", output: "done" },
  ),
  apply_patch_call_output: insert(
    {
      type: "apply_patch_call",
      call_id: "ap_2",
      status: "completed",
      operation: { type: "delete_file", path: "b.txt" },
    },
    { type: "apply_patch_call_output", call_id: "ap_2", status: "failed" },
  ),
  mcp_list_tools: insert({
    type: "mcp_list_tools",
    id: "mcpl_1",
    server_label: "docs",
    tools: [{ name: "search", input_schema: { type: "object" } }],
  }),
  mcp_approval_request: insert(
    {
      type: "mcp_approval_request",
      id: "mcpr_1",
      name: "search",
      arguments: "{}",
      server_label: "docs",
    },
    { type: "mcp_approval_response", approval_request_id: "mcpr_1", approve: true },
  ),
  mcp_approval_response: insert({
    type: "mcp_approval_response",
    approval_request_id: "mcpr_0",
    approve: false,
    reason: "not now",
  }),
  mcp_call: insert({
    type: "mcp_call",
    id: "mcp_1",
    name: "search",
    arguments: '{"q":"x"}',
    server_label: "docs",
    output: "found",
    status: "completed",
  }),
  custom_tool_call: insert(
    { type: "custom_tool_call", id: "ctc_1", call_id: "c1", name: "exec", input: "text(1)" },
    { type: "custom_tool_call_output", call_id: "c1", output: "Script completed\n1" },
  ),
  custom_tool_call_output: insert(
    { type: "custom_tool_call", call_id: "c2", name: "exec", input: "text(2)" },
    {
      type: "custom_tool_call_output",
      id: "ctco_2",
      call_id: "c2",
      output: [
        { type: "input_text", text: "Script completed" },
        { type: "input_text", text: "2" },
      ],
    },
  ),
  compaction_trigger: (req) => req.input.push({ type: "compaction_trigger" }),
  item_reference: insert({ type: "item_reference", id: "msg_stored_1" }),
  program: insert(
    {
      type: "program",
      id: "prg_1",
      call_id: "p1",
      code: "await tools.status()",
      fingerprint: "fp_1",
    },
    { type: "program_output", id: "prgo_1", call_id: "p1", result: "ok", status: "completed" },
  ),
  program_output: insert({
    type: "program_output",
    id: "prgo_2",
    call_id: "p0",
    result: "stored program's result",
    status: "incomplete",
  }),
};

/** Every message role, in a message of its own (EasyInputMessage form: string content, no type). */
const ROLES: { [K in OpenAI.Responses.EasyInputMessage["role"]]: Item } = {
  user: { role: "user", content: "And the cheapest?" },
  assistant: { role: "assistant", content: "Checking.", phase: "commentary" },
  system: { role: "system", content: "Prices are in USD." },
  developer: { role: "developer", content: "Answer in one line." },
};

/** Every input content part, in a user message. */
const PARTS: {
  [K in OpenAI.Responses.ResponseInputContent["type"]]: OpenAI.Responses.ResponseInputContent;
} = {
  input_text: {
    type: "input_text",
    text: "see",
    prompt_cache_breakpoint: { mode: "explicit", ttl: "30m" },
  },
  input_image: { type: "input_image", detail: "auto", file_id: "file_img" },
  input_file: { type: "input_file", file_url: "https://example.com/a.pdf" },
};

const TOOLS: { [K in ToolType]: OpenAI.Responses.Tool } = {
  function: { type: "function", name: "grep", parameters: { type: "object" }, strict: true },
  file_search: { type: "file_search", vector_store_ids: ["vs_1"] },
  computer: { type: "computer" } as OpenAI.Responses.Tool,
  computer_use_preview: {
    type: "computer_use_preview",
    display_height: 768,
    display_width: 1024,
    environment: "linux",
  },
  web_search: { type: "web_search" },
  web_search_2025_08_26: { type: "web_search_2025_08_26" } as OpenAI.Responses.Tool,
  mcp: { type: "mcp", server_label: "docs", server_url: "https://mcp.example.com" },
  code_interpreter: { type: "code_interpreter", container: { type: "auto" } },
  programmatic_tool_calling: { type: "programmatic_tool_calling" } as OpenAI.Responses.Tool,
  image_generation: { type: "image_generation" },
  local_shell: { type: "local_shell" },
  shell: { type: "shell" } as OpenAI.Responses.Tool,
  custom: { type: "custom", name: "exec", format: { type: "text" } },
  namespace: {
    type: "namespace",
    name: "files",
    description: "File tools",
    tools: [{ type: "function", name: "read", parameters: null, strict: null }],
  } as OpenAI.Responses.Tool,
  tool_search: { type: "tool_search" } as OpenAI.Responses.Tool,
  web_search_preview: { type: "web_search_preview" },
  web_search_preview_2025_03_11: { type: "web_search_preview_2025_03_11" },
  apply_patch: { type: "apply_patch" },
};

/** Every top-level field, with a value the API takes (input, tools, model and store are in the base). */
const FIELDS: { [K in Exclude<keyof Params, "input" | "tools" | "model" | "store">]-?: unknown } = {
  access_programs: { type: "auto" },
  background: false,
  background_options: {},
  context_management: [{ type: "compaction", compact_threshold: 200_000 }],
  conversation: null,
  image: {},
  include: ["reasoning.encrypted_content"],
  instructions: "You are terse.",
  max_output_tokens: 4096,
  max_tool_calls: 8,
  metadata: { run: "1" },
  moderation: null,
  parallel_tool_calls: false,
  previous_response_id: null,
  prompt: null,
  prompt_cache_key: "session-1",
  prompt_cache_options: { mode: "implicit", ttl: "30m" },
  prompt_cache_retention: "24h",
  reasoning: { effort: "low", summary: "auto" },
  safety_identifier: "user-1",
  service_tier: "auto",
  stream: false,
  stream_options: null,
  temperature: 1,
  text: { verbosity: "low" },
  tool_choice: "auto",
  top_logprobs: 0,
  top_p: 1,
  truncation: "disabled",
  user: "user-1",
};

export const responsesCases: FormatCases<Req> = {
  format: "openai-responses",
  base,
  cases: [
    ...casesOf("item", ITEMS, (edit) => edit),
    ...casesOf<Req, Item>("role", ROLES, (item) => insert(item)),
    ...casesOf<Req, OpenAI.Responses.ResponseInputContent>("part", PARTS, (part) =>
      insert({ role: "user", content: [part] }),
    ),
    ...casesOf<Req, Tool>("tool", TOOLS, (tool) => (req) => req.tools!.splice(1, 0, tool)),
    ...fieldCases<Req>(FIELDS),
    {
      name: "Codex's shape: tools in additional_tools only, a freeform tool's output",
      edit: (req) => {
        delete req.tools;
        req.input.unshift({
          type: "additional_tools",
          role: "developer",
          tools: [
            {
              type: "namespace",
              name: "functions",
              description: "",
              tools: [
                { type: "function", name: "dump", parameters: null, strict: false },
                { type: "function", name: "status", parameters: null, strict: false },
              ],
            },
          ],
        } as Item);
        Object.assign(req, {
          reasoning: { effort: "low", context: "all_turns" },
          include: ["reasoning.encrypted_content"],
          prompt_cache_key: "thread-1",
          client_metadata: { thread_id: "thread-1" },
        });
      },
    },
  ],
};
