/** GET /openapi.json — OpenAPI 3.1, generated from the zod schemas the routes validate with (no auth). */
import { Hono } from "hono";
import { z } from "zod";
import pkg from "../../package.json" with { type: "json" };
import { OffloadConfigPatchSchema, OffloadConfigSchema } from "../config.ts";
import { ExtractLimitsSchema } from "../extract/options.ts";
import type { AppEnv } from "../http/context.ts";
import {
  ConfigResponseSchema,
  ErrorSchema,
  ExtractBatchSchema,
  ExtractFailureSchema,
  ExtractSuccessSchema,
  HealthSchema,
  MemorySchema,
  RecallRequestSchema,
  RecallResponseSchema,
  SessionListSchema,
  SessionReportSchema,
  SessionResponseSchema,
  SummarySchema,
  TenantReportSchema,
} from "./schemas.ts";

function schema(s: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ "application/json": { schema: ref(name) } });

function errors(...statuses: number[]): Record<string, unknown> {
  const why: Record<number, string> = {
    400: "Bad JSON or a wrong shape (the path names where), or a bad config field.",
    401: "No key, or an unknown one.",
    404: "Unknown session, mem_id or route.",
    413: "Body over the configured limit (OFFLOAD_MAX_BODY_BYTES, default 32 MiB).",
    422: "A provider format this deployment does not transform yet.",
    500: "Internal error (no details are given out).",
    503: "A storage backend failed; safe to retry.",
  };
  return Object.fromEntries(
    statuses.map((s) => [String(s), { description: why[s], content: json("Error") }]),
  );
}

/** The extraction limits as query parameters, from the schema the route validates them with. */
function extractQuery(): Record<string, unknown>[] {
  const limits = Object.entries(ExtractLimitsSchema.shape).map(([name, field]) => ({
    name,
    in: "query",
    required: false,
    description: field.description,
    schema: schema(field, "input"),
  }));
  const onError = {
    name: "on_error",
    in: "query",
    required: false,
    description: "multipart: warn = one result per file; raise = the first failure as 422.",
    schema: { type: "string", enum: ["warn", "raise"], default: "warn" },
  };
  return [...limits, onError];
}

const sessionId = {
  name: "session_id",
  in: "path",
  required: true,
  schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
};
const configHeader = {
  name: "x-offload-config",
  in: "header",
  required: false,
  description: "A JSON config patch for this request only (fields of ConfigPatch).",
  schema: { type: "string" },
};

function build(): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "edge-offload",
      version: pkg.version,
      description:
        "Tool-output offload for LLM agents: compacts provider requests, keeps full bodies in a ledger, answers recalls.",
    },
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A key from OFFLOAD_API_KEYS; it names the tenant.",
        },
        offloadKey: {
          type: "apiKey",
          in: "header",
          name: "x-offload-key",
          description:
            "The proxy routes: a key from OFFLOAD_API_KEYS (Authorization is the provider's).",
        },
      },
      schemas: {
        Config: schema(OffloadConfigSchema, "output"),
        ConfigPatch: schema(OffloadConfigPatchSchema, "input"),
        ConfigResponse: schema(ConfigResponseSchema, "output"),
        RecallRequest: schema(RecallRequestSchema, "input"),
        RecallResponse: schema(RecallResponseSchema, "output"),
        Session: schema(SessionResponseSchema, "output"),
        SessionList: schema(SessionListSchema, "output"),
        Memory: schema(MemorySchema, "output"),
        Summary: schema(SummarySchema, "output"),
        SessionReport: schema(SessionReportSchema, "output"),
        TenantReport: schema(TenantReportSchema, "output"),
        Health: schema(HealthSchema, "output"),
        ExtractSuccess: schema(ExtractSuccessSchema, "output"),
        ExtractFailure: schema(ExtractFailureSchema, "output"),
        ExtractBatch: schema(ExtractBatchSchema, "output"),
        Error: schema(ErrorSchema, "output"),
      },
    },
    security: [{ bearer: [] }],
    paths: {
      "/": {
        get: {
          summary:
            "The savings dashboard (HTML): the login form, or with ?key= (local use) the dashboard",
          security: [],
          parameters: [
            {
              name: "key",
              in: "query",
              required: false,
              description: "An API key; prefer the form, which keeps it out of URLs.",
              schema: { type: "string" },
            },
          ],
          responses: {
            "200": {
              description: "The login form, or the dashboard for a valid key",
              content: { "text/html": { schema: { type: "string" } } },
            },
            "401": {
              description: "The login form again: the key is unknown",
              content: { "text/html": { schema: { type: "string" } } },
            },
          },
        },
        post: {
          summary: "Sign in to the dashboard with the form's key",
          security: [],
          requestBody: {
            required: true,
            content: {
              "application/x-www-form-urlencoded": {
                schema: {
                  type: "object",
                  properties: { key: { type: "string" } },
                  required: ["key"],
                },
              },
            },
          },
          responses: {
            "200": {
              description: "The dashboard (HTML)",
              content: { "text/html": { schema: { type: "string" } } },
            },
            "401": {
              description: "The login form again: the key is unknown or empty",
              content: { "text/html": { schema: { type: "string" } } },
            },
            ...errors(413),
          },
        },
      },
      "/healthz": {
        get: {
          summary: "Liveness",
          security: [],
          responses: { "200": { description: "Up", content: json("Health") } },
        },
      },
      "/openapi.json": {
        get: {
          summary: "This document",
          security: [],
          responses: { "200": { description: "OpenAPI 3.1" } },
        },
      },
      "/v1/sessions": {
        get: {
          summary: "The tenant's sessions (eventually consistent)",
          parameters: [
            { name: "cursor", in: "query", required: false, schema: { type: "string" } },
            {
              name: "limit",
              in: "query",
              required: false,
              schema: { type: "integer", minimum: 1, maximum: 1000 },
            },
          ],
          responses: {
            "200": { description: "A page of sessions", content: json("SessionList") },
            ...errors(400, 401, 500, 503),
          },
        },
      },
      "/v1/sessions/{session_id}": {
        get: {
          summary: "Turns, tool results (tier, action, mem_id, sizes) and totals",
          parameters: [sessionId],
          responses: {
            "200": { description: "The session", content: json("Session") },
            ...errors(400, 401, 404, 500, 503),
          },
        },
        delete: {
          summary: "Delete the session: its state, its ledger bodies and its index entries",
          parameters: [sessionId],
          responses: {
            "204": { description: "Deleted (also when it did not exist)" },
            ...errors(400, 401, 500, 503),
          },
        },
      },
      "/v1/sessions/{session_id}/compact": {
        post: {
          summary: "Compact one provider request",
          description:
            "The body is the provider request exactly as the client would send it; the answer is the request to send instead. With compaction off the answer is the same bytes.",
          parameters: [
            sessionId,
            {
              name: "format",
              in: "query",
              required: false,
              schema: {
                type: "string",
                enum: ["anthropic", "openai-chat", "openai-responses"],
                default: "anthropic",
              },
            },
            configHeader,
          ],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: { type: "object", description: "An Anthropic Messages request." },
              },
            },
          },
          responses: {
            "200": {
              description: "The request to send to the provider",
              headers: {
                "x-offload-summary": {
                  description: "One line of JSON (Summary).",
                  schema: ref("Summary"),
                },
              },
              content: { "application/json": { schema: { type: "object" } } },
            },
            ...errors(400, 401, 413, 422, 500),
          },
        },
      },
      "/v1/sessions/{session_id}/config": {
        put: {
          summary: "Set the session's config layer (replaces the previous one)",
          parameters: [sessionId],
          requestBody: { required: true, content: json("ConfigPatch") },
          responses: {
            "200": { description: "Stored", content: json("ConfigResponse") },
            ...errors(400, 401, 413, 500, 503),
          },
        },
      },
      "/v1/sessions/{session_id}/recall": {
        post: {
          summary: "Answer a recall_tool_result call",
          parameters: [sessionId, configHeader],
          requestBody: { required: true, content: json("RecallRequest") },
          responses: {
            "200": {
              description: "The answer (is_error for a model mistake)",
              content: json("RecallResponse"),
            },
            ...errors(400, 401, 413, 500, 503),
          },
        },
      },
      "/v1/sessions/{session_id}/report": {
        get: {
          summary:
            "Savings per turn (live, or would-be in shadow mode), recalls, gate verdicts, the last turn's decisions",
          parameters: [sessionId],
          responses: {
            "200": { description: "The session's savings report", content: json("SessionReport") },
            ...errors(400, 401, 404, 500, 503),
          },
        },
      },
      "/v1/report": {
        get: {
          summary:
            "Savings totals for a page of the tenant's sessions (listed from KV: eventually consistent)",
          parameters: [
            { name: "cursor", in: "query", required: false, schema: { type: "string" } },
            {
              name: "limit",
              in: "query",
              required: false,
              schema: { type: "integer", minimum: 1, maximum: 50, default: 20 },
            },
          ],
          responses: {
            "200": {
              description: "A page of session totals and their sums",
              content: json("TenantReport"),
            },
            ...errors(400, 401, 500, 503),
          },
        },
      },
      "/v1/extract": {
        post: {
          summary: "Extract the text of an attachment (cached per tenant by content hash)",
          description:
            "Raw body: the file, with its Content-Type and an optional x-filename (percent-encoded if not ASCII). multipart/form-data: several files, one result each. " +
            "An extraction is cached in the ledger under the file's SHA-256, so the same file is parsed once per tenant (x-extract-cache: hit|miss). " +
            "CPU: a PDF page costs about 3-6 ms; max_pages bounds a request's work.",
          parameters: [
            ...extractQuery(),
            {
              name: "x-filename",
              in: "header",
              required: false,
              description: "The file's name (raw body); helps tell generic types apart.",
              schema: { type: "string" },
            },
          ],
          requestBody: {
            required: true,
            content: {
              "application/octet-stream": { schema: { type: "string", format: "binary" } },
              "multipart/form-data": {
                schema: {
                  type: "object",
                  additionalProperties: { type: "string", format: "binary" },
                },
              },
            },
          },
          responses: {
            "200": {
              description: "The text (raw body), or one result per file (multipart)",
              headers: {
                "x-extract-cache": {
                  description: "hit: served from the tenant's cache; miss: parsed now.",
                  schema: { type: "string", enum: ["hit", "miss"] },
                },
              },
              content: {
                "application/json": {
                  schema: { oneOf: [ref("ExtractSuccess"), ref("ExtractBatch")] },
                },
              },
            },
            "422": {
              description: "The file cannot be extracted: send it natively (fallback).",
              content: json("ExtractFailure"),
            },
            ...errors(400, 401, 413, 500),
          },
        },
      },
      ...proxyPaths(),
      "/v1/sessions/{session_id}/memories/{mem_id}": {
        get: {
          summary: "What the ledger holds under a mem_id (no body)",
          parameters: [
            sessionId,
            {
              name: "mem_id",
              in: "path",
              required: true,
              schema: { type: "string", pattern: "^trm_[0-9a-f]{24}$" },
            },
          ],
          responses: {
            "200": { description: "Metadata", content: json("Memory") },
            ...errors(401, 404, 500, 503),
          },
        },
      },
    },
  };
}

/** The drop-in proxy (docs/proxy.md): the provider's request and answer, our two headers. */
function proxyPaths(): Record<string, unknown> {
  const session = {
    name: "x-offload-session",
    in: "header",
    required: true,
    description: "The conversation: 1-128 chars of letters, digits and . _ : -.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" },
  };
  const op = (
    summary: string,
    upstream: string,
    what = "recall_tool_result calls are answered by the proxy",
  ) => ({
    post: {
      summary,
      description: `Forwarded to ${upstream} after compaction; ${what}. Errors (ours and the provider's) come in the provider's error shape; ours carry x-offload-error.`,
      security: [{ offloadKey: [] }],
      parameters: [session, configHeader],
      requestBody: {
        required: true,
        content: {
          "application/json": { schema: { type: "object", description: "The provider request." } },
        },
      },
      responses: {
        "200": {
          description: "The provider's answer (JSON, or an event stream when the request streams)",
          headers: {
            "x-offload-summary": {
              description: "One line of JSON (Summary, with its proxy field).",
              schema: ref("Summary"),
            },
          },
          content: {
            "application/json": { schema: { type: "object" } },
            "text/event-stream": { schema: { type: "string" } },
          },
        },
        default: {
          description:
            "An error in the provider's shape: the provider's own (status and body as sent), or ours (x-offload-error names its type; 502 when the provider could not be reached).",
        },
      },
    },
  });
  return {
    "/anthropic/v1/messages": op(
      "Anthropic Messages, through the proxy",
      "${ANTHROPIC_BASE_URL}/v1/messages",
    ),
    "/openai/v1/chat/completions": op(
      "OpenAI Chat Completions, through the proxy",
      "${OPENAI_BASE_URL}/chat/completions",
    ),
    "/openai/v1/responses": op(
      "OpenAI Responses, through the proxy",
      "${OPENAI_BASE_URL}/responses",
    ),
    "/anthropic/v1/messages/count_tokens": op(
      "Anthropic token count of the request as the next call will send it",
      "${ANTHROPIC_BASE_URL}/v1/messages/count_tokens",
      "compacted exactly as the next call of the session will be, but nothing is recorded",
    ),
    "/openai/v1/responses/input_tokens": op(
      "OpenAI Responses input token count of the request as the next call will send it",
      "${OPENAI_BASE_URL}/responses/input_tokens",
      "compacted exactly as the next call of the session will be, but nothing is recorded",
    ),
  };
}

let doc: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  doc ??= build();
  return doc;
}

export const openApiRoutes = new Hono<AppEnv>().get("/openapi.json", (c) =>
  c.json(openApiDocument()),
);
