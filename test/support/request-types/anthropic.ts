/**
 * One Anthropic Messages request per documented content block type (the beta union, a superset of the stable
 * one), message role, tool_result content type, system message content type, tool type and top-level field,
 * typed against `@anthropic-ai/sdk`: the mapped types fail to compile when the SDK gains a member that has no
 * case here. Blocks go where the API takes them: user-side blocks in a user message, the model's blocks
 * (thinking, server tool calls and their results, MCP, compaction…) in an assistant message.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { BIG, casesOf, type FormatCases, fieldCases } from "./shared.ts";

type Block = Anthropic.Beta.Messages.BetaContentBlockParam;
type BlockType = Block["type"];
type Message = Anthropic.Beta.Messages.BetaMessageParam;
type Params = Anthropic.Beta.Messages.MessageCreateParamsNonStreaming;
type Tool = Anthropic.Beta.Messages.BetaToolUnion;
type ResultPart = Exclude<
  Anthropic.Beta.Messages.BetaToolResultBlockParam["content"],
  string | undefined
>[number];
type SystemPart = Exclude<
  Anthropic.Beta.Messages.BetaSystemMessageParam["content"],
  string | undefined
>[number];
type Req = Omit<Params, "messages" | "tools"> & { messages: Message[]; tools: Tool[] };

function base(): Req {
  return {
    model: "claude-sonnet-4-6",
    max_tokens: 1024,
    system: [
      { type: "text", text: "You are a careful agent.", cache_control: { type: "ephemeral" } },
    ],
    tools: [
      { name: "dump", description: "Dump the catalog", input_schema: { type: "object" } },
      { name: "status", description: "Check the status", input_schema: { type: "object" } },
    ],
    messages: [
      { role: "user", content: [{ type: "text", text: "Load the catalog." }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Loading." },
          { type: "tool_use", id: "t1", name: "dump", input: {} },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: BIG }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "status", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] },
    ],
  };
}

const content = (m: Message): Block[] => m.content as Block[];
/** Blocks of the user's first message (the task). */
const inUser =
  (...blocks: Block[]) =>
  (req: Req) =>
    content(req.messages[0]!).push(...blocks);
/** Blocks of the model's second turn, before its call (the one that settles the large result). */
const inAssistant =
  (...blocks: Block[]) =>
  (req: Req) =>
    content(req.messages[3]!).unshift(...blocks);

const PNG = "iVBORw0KGgo=";
const PDF = "JVBERi0xLjQK";

const BLOCKS: { [K in BlockType]: (req: Req) => void } = {
  text: inUser({
    type: "text",
    text: "Prices per the list.",
    citations: [
      {
        type: "char_location",
        cited_text: "item-1",
        document_index: 0,
        document_title: "list",
        start_char_index: 0,
        end_char_index: 6,
      },
    ],
  }),
  image: inUser(
    { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
    { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
    { type: "image", source: { type: "file", file_id: "file_img" } },
  ),
  document: inUser(
    {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: PDF },
      title: "a.pdf",
      citations: { enabled: true },
    },
    { type: "document", source: { type: "text", media_type: "text/plain", data: "plain" } },
    {
      type: "document",
      source: { type: "content", content: [{ type: "text", text: "chunk" }] },
      context: "a chunked doc",
    },
    { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
    { type: "document", source: { type: "file", file_id: "file_doc" } },
  ),
  search_result: inUser({
    type: "search_result",
    source: "https://example.com/r",
    title: "Result",
    content: [{ type: "text", text: "a hit" }],
    citations: { enabled: true },
  }),
  thinking: inAssistant({ type: "thinking", thinking: "Check the status.", signature: "sig_1" }),
  redacted_thinking: inAssistant({ type: "redacted_thinking", data: "opaque" }),
  tool_use: (req) => {
    content(req.messages[3]!).push({
      type: "tool_use",
      id: "t3",
      name: "status",
      input: { verbose: true },
      caller: { type: "direct" },
    });
    content(req.messages[4]!).push({
      type: "tool_result",
      tool_use_id: "t3",
      content: [{ type: "text", text: "all good" }],
      is_error: false,
    });
  },
  tool_result: (req) => {
    content(req.messages[4]!)[0] = {
      type: "tool_result",
      tool_use_id: "t2",
      content: [{ type: "text", text: "ok", cache_control: { type: "ephemeral", ttl: "1h" } }],
      is_error: true,
    };
  },
  server_tool_use: inAssistant(
    { type: "server_tool_use", id: "srv_1", name: "web_search", input: { query: "prices" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srv_1",
      content: [
        {
          type: "web_search_result",
          url: "https://example.com",
          title: "Prices",
          encrypted_content: "enc",
        },
      ],
    },
  ),
  web_search_tool_result: inAssistant(
    { type: "server_tool_use", id: "srv_2", name: "web_search", input: { query: "x" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srv_2",
      content: { type: "web_search_tool_result_error", error_code: "max_uses_exceeded" },
    },
  ),
  web_fetch_tool_result: inAssistant(
    { type: "server_tool_use", id: "srv_3", name: "web_fetch", input: { url: "https://e.com" } },
    {
      type: "web_fetch_tool_result",
      tool_use_id: "srv_3",
      content: {
        type: "web_fetch_result",
        url: "https://e.com",
        content: {
          type: "document",
          source: { type: "text", media_type: "text/plain", data: "page" },
        },
      },
    },
  ),
  advisor_tool_result: inAssistant(
    { type: "server_tool_use", id: "srv_4", name: "advisor", input: {} },
    {
      type: "advisor_tool_result",
      tool_use_id: "srv_4",
      content: { type: "advisor_result", text: "Check the status first." },
    },
  ),
  code_execution_tool_result: inAssistant(
    { type: "server_tool_use", id: "srv_5", name: "code_execution", input: { code: "print(1)" } },
    {
      type: "code_execution_tool_result",
      tool_use_id: "srv_5",
      content: {
        type: "code_execution_result",
        stdout: "1\n",
        stderr: "",
        return_code: 0,
        content: [],
      },
    },
  ),
  bash_code_execution_tool_result: inAssistant(
    { type: "server_tool_use", id: "srv_6", name: "bash_code_execution", input: { command: "ls" } },
    {
      type: "bash_code_execution_tool_result",
      tool_use_id: "srv_6",
      content: {
        type: "bash_code_execution_result",
        stdout: "a.txt",
        stderr: "",
        return_code: 0,
        content: [{ type: "bash_code_execution_output", file_id: "file_out" }],
      },
    },
  ),
  text_editor_code_execution_tool_result: inAssistant(
    {
      type: "server_tool_use",
      id: "srv_7",
      name: "text_editor_code_execution",
      input: { command: "view", path: "a.txt" },
    },
    {
      type: "text_editor_code_execution_tool_result",
      tool_use_id: "srv_7",
      content: {
        type: "text_editor_code_execution_view_result",
        content: "hello",
        file_type: "text",
      },
    } as Block,
  ),
  tool_search_tool_result: inAssistant(
    {
      type: "server_tool_use",
      id: "srv_8",
      name: "tool_search_tool_regex",
      input: { query: "pdf" },
    },
    {
      type: "tool_search_tool_result",
      tool_use_id: "srv_8",
      content: {
        type: "tool_search_tool_search_result",
        tool_references: [{ type: "tool_reference", tool_name: "status" }],
      },
    },
  ),
  mcp_tool_use: inAssistant(
    { type: "mcp_tool_use", id: "mcp_1", name: "search", server_name: "docs", input: { q: "x" } },
    {
      type: "mcp_tool_result",
      tool_use_id: "mcp_1",
      content: [{ type: "text", text: "found" }],
      is_error: false,
    },
  ),
  mcp_tool_result: inAssistant(
    { type: "mcp_tool_use", id: "mcp_2", name: "search", server_name: "docs", input: {} },
    { type: "mcp_tool_result", tool_use_id: "mcp_2", content: "nothing", is_error: true },
  ),
  container_upload: inUser({ type: "container_upload", file_id: "file_upload" }),
  compaction: (req) =>
    content(req.messages[1]!).unshift({
      type: "compaction",
      content: "Earlier: the user asked for the catalog.",
      encrypted_content: "enc_summary",
      signature: "sig_c",
    }),
  tool_addition: inUser({
    type: "tool_addition",
    tool: {
      type: "tool_definition",
      definition: { name: "grep", description: "Search", input_schema: { type: "object" } },
    },
  }),
  tool_removal: inUser({ type: "tool_removal", tool: { type: "tool_reference", name: "grep" } }),
  mcp_tool_listing: inAssistant({
    type: "mcp_tool_listing",
    mcp_server_name: "docs",
    tools: [{ name: "search", input_schema: { type: "object" } }],
  } as Block),
  fallback: inAssistant({
    type: "fallback",
    from: { model: "claude-opus-4-6" },
    to: { model: "claude-sonnet-4-6" },
  }),
};

/** Every content type a tool_result takes, in the small hot result (t2). */
const RESULT_PARTS: { [K in ResultPart["type"]]: ResultPart } = {
  text: { type: "text", text: "ok" },
  image: { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
  document: { type: "document", source: { type: "text", media_type: "text/plain", data: "doc" } },
  search_result: {
    type: "search_result",
    source: "kb://1",
    title: "KB",
    content: [{ type: "text", text: "hit" }],
  },
  tool_reference: { type: "tool_reference", tool_name: "status" },
  browser_state: {
    type: "browser_state",
    tabs: [{ tab_id: "1", title: "Home", url: "https://example.com", active: true }],
  },
};

/** Every content type of a mid-conversation system message. */
const SYSTEM_PARTS: { [K in SystemPart["type"]]: SystemPart } = {
  text: { type: "text", text: "# Environment\nwork dir: /w", cache_control: { type: "ephemeral" } },
  tool_addition: {
    type: "tool_addition",
    tool: { type: "tool_reference", name: "status" },
  },
  tool_removal: { type: "tool_removal", tool: { type: "tool_reference", name: "dump" } },
};

const ROLES: { [K in Message["role"]]: Message } = {
  user: { role: "user", content: "And the cheapest?" },
  assistant: { role: "assistant", content: "Checking." },
  system: { role: "system", content: "Prices are in USD." },
};

const TOOLS: { [K in NonNullable<Tool["type"]>]: Tool } = {
  custom: { type: "custom", name: "grep", input_schema: { type: "object" } },
  bash_20241022: { type: "bash_20241022", name: "bash" },
  bash_20250124: { type: "bash_20250124", name: "bash" },
  code_execution_20250522: { type: "code_execution_20250522", name: "code_execution" },
  code_execution_20250825: { type: "code_execution_20250825", name: "code_execution" },
  code_execution_20260120: { type: "code_execution_20260120", name: "code_execution" },
  code_execution_20260521: { type: "code_execution_20260521", name: "code_execution" },
  browser_toolset_20260801: { type: "browser_toolset_20260801" } as Tool,
  computer_20241022: {
    type: "computer_20241022",
    name: "computer",
    display_width_px: 1024,
    display_height_px: 768,
  },
  memory_20250818: { type: "memory_20250818", name: "memory" },
  computer_20250124: {
    type: "computer_20250124",
    name: "computer",
    display_width_px: 1024,
    display_height_px: 768,
  },
  text_editor_20241022: { type: "text_editor_20241022", name: "str_replace_editor" },
  computer_20251124: {
    type: "computer_20251124",
    name: "computer",
    display_width_px: 1024,
    display_height_px: 768,
  },
  computer_toolset_20260801: { type: "computer_toolset_20260801" } as Tool,
  text_editor_20250124: { type: "text_editor_20250124", name: "str_replace_editor" },
  text_editor_20250429: { type: "text_editor_20250429", name: "str_replace_based_edit_tool" },
  text_editor_20250728: {
    type: "text_editor_20250728",
    name: "str_replace_based_edit_tool",
    max_characters: 10_000,
  },
  web_search_20250305: { type: "web_search_20250305", name: "web_search", max_uses: 3 },
  web_fetch_20250910: { type: "web_fetch_20250910", name: "web_fetch" },
  web_search_20260209: { type: "web_search_20260209", name: "web_search" },
  web_fetch_20260209: { type: "web_fetch_20260209", name: "web_fetch" },
  web_fetch_20260309: { type: "web_fetch_20260309", name: "web_fetch" },
  web_search_20260318: { type: "web_search_20260318", name: "web_search" },
  web_fetch_20260318: { type: "web_fetch_20260318", name: "web_fetch" },
  advisor_20260301: { type: "advisor_20260301", name: "advisor" } as Tool,
  tool_search_tool_bm25_20251119: {
    type: "tool_search_tool_bm25_20251119",
    name: "tool_search_tool_bm25",
  },
  tool_search_tool_bm25: { type: "tool_search_tool_bm25", name: "tool_search_tool_bm25" },
  tool_search_tool_regex_20251119: {
    type: "tool_search_tool_regex_20251119",
    name: "tool_search_tool_regex",
  },
  tool_search_tool_regex: { type: "tool_search_tool_regex", name: "tool_search_tool_regex" },
  mcp_toolset: { type: "mcp_toolset", mcp_server_name: "docs" } as Tool,
};

/** Every top-level field, with a value the API takes (model, messages, tools and system are in the base). */
const FIELDS: {
  [K in Exclude<keyof Params, "model" | "messages" | "tools" | "system">]-?: unknown;
} = {
  max_tokens: 128_000,
  billing_policy: { type: "billing_policy" },
  cache_control: { type: "ephemeral", ttl: "1h" },
  compaction: { type: "summarize" },
  container: { id: "cntr_1" },
  context_management: {
    edits: [
      { type: "clear_thinking_20251015", keep: "all" },
      { type: "clear_tool_uses_20250919", trigger: { type: "input_tokens", value: 100_000 } },
    ],
  },
  diagnostics: { previous_message_id: null },
  fallback_credit_token: null,
  fallbacks: "default",
  inference_geo: "us",
  mcp_servers: [{ type: "url", name: "docs", url: "https://mcp.example.com" }],
  metadata: { user_id: '{"device_id":"d1","session_id":"s1"}' },
  output_config: { effort: "medium" },
  output_format: null,
  service_tier: "auto",
  speed: "standard",
  stop_sequences: ["\n\nHuman:"],
  stream: false,
  thinking: { type: "adaptive", display: "omitted" },
  thread: { type: "create" },
  tool_choice: { type: "auto", disable_parallel_tool_use: true },
  betas: ["context-management-2025-06-27"],
  user_profile_id: "up_1",
  workspace_id: "ws_1",
};

export const anthropicCases: FormatCases<Req> = {
  format: "anthropic",
  base,
  cases: [
    ...casesOf("block", BLOCKS, (edit) => edit),
    ...casesOf<Req, ResultPart>("tool_result content", RESULT_PARTS, (part) => (req) => {
      content(req.messages[4]!)[0] = { type: "tool_result", tool_use_id: "t2", content: [part] };
    }),
    ...casesOf<Req, SystemPart>(
      "system message content",
      SYSTEM_PARTS,
      (part) => (req) =>
        req.messages.splice(1, 0, {
          role: "system",
          content: [part],
          clear_at: "never",
        } as Message),
    ),
    // After the first turn: a user or assistant message there merges with its neighbour's turn.
    ...casesOf<Req, Message>(
      "role",
      ROLES,
      (message) => (req) => req.messages.splice(1, 0, message),
    ),
    ...casesOf<Req, Tool>("tool", TOOLS, (tool) => (req) => req.tools.splice(1, 0, tool)),
    ...fieldCases<Req>(FIELDS),
    {
      name: "consecutive messages of one role (one turn to the API): calls and results across them",
      edit: (req) => {
        // user, assistant (t3), assistant (t1), user (t3's result), user (t1's result), …
        req.messages.splice(1, 0, {
          role: "assistant",
          content: [{ type: "tool_use", id: "t3", name: "status", input: {} }],
        });
        req.messages.splice(3, 0, {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t3", content: "three" }],
        });
      },
    },
    {
      name: "server-held history (thread continue): a result for a call the server holds",
      edit: (req) => {
        Object.assign(req, { thread: { type: "continue", previous_message_id: "msg_prev" } });
        req.messages.unshift({
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_prev", content: "earlier" }],
        });
      },
    },
    {
      name: "Claude Code's shape: system message mid-conversation with output_config, system text blocks",
      edit: (req) => {
        req.system = [
          { type: "text", text: "x-anthropic-billing-header: cc_version=0" },
          { type: "text", text: "You are an agent.", cache_control: { type: "ephemeral" } },
        ];
        req.messages.splice(1, 0, {
          role: "system",
          content: [{ type: "text", text: "# Environment", cache_control: { type: "ephemeral" } }],
          output_config: { effort: "medium" },
        } as Message);
        req.tools.push({
          name: "DeferredToolPlaceholder",
          description: "never call",
          input_schema: { type: "object", properties: {} },
          defer_loading: true,
        });
        Object.assign(req, {
          thinking: { type: "adaptive", display: "omitted" },
          context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
          output_config: { effort: "medium" },
          stream: true,
        });
      },
    },
  ],
};
