/**
 * Summing the providers' usage objects across recall hops. Every numeric field adds up, nested
 * objects (`cache_creation`, `input_tokens_details`, `prompt_tokens_details`, `server_tool_use`…)
 * add field by field, and anything else (a `service_tier` string) is the later call's. A field one
 * side lacks counts as 0.
 */
export function addUsage(a: unknown, b: unknown): unknown {
  if (a === undefined || a === null) return b;
  if (b === undefined || b === null) return a;
  if (typeof a === "number" && typeof b === "number") return a + b;
  if (isRecord(a) && isRecord(b)) {
    const out: Record<string, unknown> = {};
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      out[key] = addUsage(a[key], b[key]);
    return out;
  }
  return b;
}

/**
 * `later` overrides `earlier` field by field where it is set (a stream's final counters over its
 * first ones).
 */
export function overlayUsage(earlier: unknown, later: unknown): unknown {
  if (!isRecord(earlier)) return later ?? earlier;
  if (!isRecord(later)) return earlier;
  const out: Record<string, unknown> = { ...earlier };
  for (const [k, v] of Object.entries(later)) if (v !== null && v !== undefined) out[k] = v;
  return out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
