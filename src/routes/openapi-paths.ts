/**
 * The service's paths in /openapi.json: every route with its parameters, bodies, answers and
 * errors, built from the zod schemas the routes use (components are named in openapi.ts).
 */
import { configHeader, errors, extractQuery, json, ref, sessionId } from "./openapi-parts.ts";

/** Every route of the service but the proxy routes (openapi-proxy.ts). */
export function servicePaths(): Record<string, unknown> {
  return {
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
          {
            name: "x-offload-sends-betas",
            in: "header",
            required: false,
            description:
              "true: you send upstream the anthropic-beta values the summary's anthropic_beta names, so the recall tool may be declared in a system message (tool_result_recall_tool_inline); absent or false: the answer never needs a beta you did not ask for.",
            schema: { type: "string", enum: ["true", "false"] },
          },
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
    "/v1/sessions/{session_id}/usage": {
      post: {
        summary:
          "Post the provider's usage for a compacted turn (billed figures and calibration; idempotent per turn)",
        parameters: [sessionId],
        requestBody: { required: true, content: json("UsageRequest") },
        responses: {
          "200": { description: "Kept (or already kept)", content: json("UsageResponse") },
          ...errors(400, 401, 404, 409, 413, 500, 503),
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
  };
}
