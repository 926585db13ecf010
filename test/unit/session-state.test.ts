import { describe, expect, it } from "vitest";
import {
  expiresAt,
  INDEX_REFRESH_MS,
  indexDue,
  indexTtlSeconds,
  isExpired,
  parseRetention,
  sessionObjectName,
} from "../../src/store/state.ts";

describe("session state rules", () => {
  it("parses retention: default 7 days, 0 = forever, nonsense refused", () => {
    expect(parseRetention(undefined)).toBe(604_800);
    expect(parseRetention("")).toBe(604_800);
    expect(parseRetention("0")).toBe(0);
    expect(parseRetention("3600")).toBe(3600);
    for (const bad of ["-1", "1.5", "soon"])
      expect(() => parseRetention(bad)).toThrow(/OFFLOAD_RETENTION_SECONDS/);
  });

  it("expires an idle session exactly at last_active + retention", () => {
    expect(expiresAt(1000, 10)).toBe(11_000);
    expect(expiresAt(1000, 0)).toBeNull();
    expect(isExpired(10_999, 1000, 10)).toBe(false);
    expect(isExpired(11_000, 1000, 10)).toBe(true);
    expect(isExpired(Number.MAX_SAFE_INTEGER, 1000, 0)).toBe(false);
  });

  it("refreshes the session index first, then once a day", () => {
    expect(indexDue(5, null)).toBe(true);
    expect(indexDue(INDEX_REFRESH_MS - 1, 0)).toBe(false);
    expect(indexDue(INDEX_REFRESH_MS, 0)).toBe(true);
    expect(indexTtlSeconds(0)).toBeUndefined();
    expect(indexTtlSeconds(60)).toBe(60 + 86_400);
  });

  it("names objects by tenant and session", () => {
    expect(sessionObjectName({ tenant: "acme", session: "s:1" })).toBe("acme/s:1");
  });
});
