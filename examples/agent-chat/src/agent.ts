/**
 * A chat agent (Agents SDK, `AIChatAgent`: one SQLite-backed Durable Object per conversation) whose model
 * calls go through edge-offload's AI SDK middleware. The store lives in the agent's own object
 * (`AgentStore` over `this.ctx.storage`), so large tool outputs are parked, stubbed and recalled without a
 * second object; the recall loop runs inside `streamText`'s model calls, and the chat client never sees the
 * recall tool.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { AIChatAgent } from "@cloudflare/ai-chat";
import { convertToModelMessages, stepCountIs, streamText, wrapLanguageModel } from "ai";
import {
  AgentStore,
  type OffloadCallReport,
  offloadMiddleware,
  sessionReport,
} from "edge-offload/agents";
import type { Env } from "./env.ts";
import { tools } from "./tools.ts";

/** The object is the conversation: one session per agent. */
const SESSION = "conversation";

export class ChatAgent extends AIChatAgent<Env> {
  /** Each model call's report (what was offloaded, recall hops, problems), newest last. */
  readonly reports: OffloadCallReport[] = [];
  #store: AgentStore | undefined;

  /** The store in this object's own SQLite (R2 for bodies over ~160K characters, when bound). */
  get store(): AgentStore {
    this.#store ??= new AgentStore(this.ctx.storage, { bucket: this.env.BODIES });
    return this.#store;
  }

  /** `GET /agents/chat-agent/<name>/offload-report`: what edge-offload did for this conversation. */
  override async onRequest(request: Request): Promise<Response> {
    if (new URL(request.url).pathname.endsWith("/offload-report")) {
      try {
        return Response.json(await sessionReport({ store: this.store, session: SESSION }));
      } catch {
        return Response.json({ error: "no model call yet" }, { status: 404 });
      }
    }
    return super.onRequest(request);
  }

  // The chat persists the assistant message from the stream itself: the finish callback is not needed.
  override async onChatMessage(
    _onFinish: unknown,
    options?: { abortSignal?: AbortSignal },
  ): Promise<Response> {
    const middleware = offloadMiddleware({
      store: this.store,
      session: SESSION,
      secret: this.env.OFFLOAD_SECRET,
      config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
      onReport: (report) => this.reports.push(report),
    });
    const anthropic = createAnthropic({
      apiKey: this.env.ANTHROPIC_API_KEY,
      baseURL: this.env.ANTHROPIC_BASE_URL,
    });
    const result = streamText({
      model: wrapLanguageModel({ model: anthropic("claude-sonnet-4-6"), middleware }),
      messages: await convertToModelMessages(this.messages),
      tools,
      stopWhen: stepCountIs(5),
      ...(options?.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    });
    return result.toUIMessageStreamResponse();
  }

  /** The latest reports (the example's tests read them over RPC). */
  async lastReports(): Promise<OffloadCallReport[]> {
    return structuredClone(this.reports);
  }
}
