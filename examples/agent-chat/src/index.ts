/** The example's Worker: the Agents SDK routes `/agents/chat-agent/<name>` to the conversation's object. */
import { routeAgentRequest } from "agents";
import type { Env } from "./env.ts";

export { ChatAgent } from "./agent.ts";

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (await routeAgentRequest(request, env)) ?? new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
