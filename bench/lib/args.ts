/** `--name=value` from argv, else the default (the benches' flags are all of that form). */
export function flag(argv: readonly string[], name: string, fallback: string): string {
  const a = argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : a.slice(name.length + 3);
}
