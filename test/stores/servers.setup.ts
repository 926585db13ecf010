/**
 * The stores project's global setup: one Postgres and one Redis for the whole run (each store of a test
 * gets tables or keys of its own prefix), their URLs handed to the tests through `inject`, or why a server
 * is missing.
 */
import type { TestProject } from "vitest/node";
import { type Started, startPostgres, startRedis } from "../support/servers.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** A postgres:// URL, or `missing: <why>`. */
    postgres: string;
    /** A redis:// URL, or `missing: <why>`. */
    redis: string;
  }
}

const urlOf = (s: Started) => ("missing" in s ? `missing: ${s.missing}` : s.url);

export default async function setup(project: TestProject) {
  const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  project.provide("postgres", urlOf(postgres));
  project.provide("redis", urlOf(redis));
  return async () => {
    await Promise.all([postgres, redis].map((s) => ("missing" in s ? null : s.stop())));
  };
}
