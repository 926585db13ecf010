/** `--name=value` from argv, else the default (the benches' flags are all of that form). */
export function flag(argv: readonly string[], name: string, fallback: string): string {
  const a = argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : a.slice(name.length + 3);
}

/**
 * `--name=N`, a whole number from `min` to `max` written in digits (Number() alone would also take "",
 * "0x10" and "1e3"), else the default.
 */
export function intFlag(
  argv: readonly string[],
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const arg = flag(argv, name, String(fallback));
  const n = /^\d{1,9}$/.test(arg) ? Number(arg) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new Error(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

/** `--config=JSON`: the config keys a bench adds to the defaults' row, or null when not given. */
export function configFlag(argv: readonly string[]): Record<string, unknown> | null {
  const arg = flag(argv, "config", "");
  if (arg === "") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(arg);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new Error("--config must be a JSON object of config fields");
  return parsed as Record<string, unknown>;
}
