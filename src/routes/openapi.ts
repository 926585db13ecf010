/**
 * GET /openapi.json — OpenAPI 3.1, generated from the zod schemas the routes validate with (no
 * auth).
 */
import { Hono } from "hono";
import pkg from "../../package.json" with { type: "json" };
import { OffloadConfigPatchSchema, OffloadConfigSchema } from "../config.ts";
import type { AppEnv } from "../http/context.ts";
import { schema } from "./openapi-parts.ts";
import { servicePaths } from "./openapi-paths.ts";
import { proxyPaths } from "./openapi-proxy.ts";
import { ErrorSchema } from "./schemas/errors.ts";
import {
  ExtractBatchSchema,
  ExtractFailureSchema,
  ExtractSuccessSchema,
} from "./schemas/extract.ts";
import { SessionReportSchema, TenantReportSchema } from "./schemas/report.ts";
import {
  ConfigResponseSchema,
  HealthSchema,
  MemorySchema,
  RecallRequestSchema,
  RecallResponseSchema,
  SessionListSchema,
  SessionResponseSchema,
} from "./schemas/session.ts";
import { SummarySchema } from "./schemas/summary.ts";
import { UsageRequestSchema, UsageResponseSchema } from "./schemas/usage.ts";

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
        UsageRequest: schema(UsageRequestSchema, "input"),
        UsageResponse: schema(UsageResponseSchema, "output"),
        Health: schema(HealthSchema, "output"),
        ExtractSuccess: schema(ExtractSuccessSchema, "output"),
        ExtractFailure: schema(ExtractFailureSchema, "output"),
        ExtractBatch: schema(ExtractBatchSchema, "output"),
        Error: schema(ErrorSchema, "output"),
      },
    },
    security: [{ bearer: [] }],
    paths: { ...servicePaths(), ...proxyPaths() },
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
