/**
 * Per-tool rules (`tool_result_tool_rules`): the first rule whose `tool` matches a result's tool name
 * gives that result its own config (a size floor, a large threshold, a hot window, a recall prior, a
 * first delivery), or keeps it full whatever the gate says (`offload: "never"`). Every decision a rule
 * touched says so in its reason and names the rule (`rule`), and the turn's report counts what each
 * rule matched.
 *
 * A pattern is a tool name, or a glob where `*` matches any run of characters. Both the rules (a
 * request's `x-offload-config`) and the tool names (the request) may be hostile: a match costs time
 * linear in the name and the pattern (greedy segments, each found by KMP, never backtracking), and a
 * turn matches each distinct tool name once.
 */
import type { OffloadConfig, ToolRule } from "../../config.ts";
import type { ToolResultSite } from "../formats/types.ts";
import type { TurnDecision } from "../types.ts";
import type { TurnContext } from "./context.ts";

/** Whether `name` matches `pattern` (`*` matches any run of characters, nothing else is special). */
export function matchesTool(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  const parts = pattern.split("*");
  const head = parts[0]!;
  const tail = parts[parts.length - 1]!;
  if (head.length + tail.length > name.length) return false;
  if (!name.startsWith(head) || !name.endsWith(tail)) return false;
  // The middle segments in order, each at its leftmost place (greedy is exact for `*`-only globs).
  let at = head.length;
  const end = name.length - tail.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    if (part === "") continue;
    const found = indexOfKmp(name, part, at, end);
    if (found < 0) return false;
    at = found + part.length;
  }
  return true;
}

/** The first index ≥ `from` where `part` occurs within `text[from, end)`, or -1: O(end − from + |part|). */
function indexOfKmp(text: string, part: string, from: number, end: number): number {
  const fail = new Int32Array(part.length);
  for (let i = 1, k = 0; i < part.length; i++) {
    while (k > 0 && part[i] !== part[k]) k = fail[k - 1]!;
    if (part[i] === part[k]) k++;
    fail[i] = k;
  }
  for (let i = from, k = 0; i < end; i++) {
    while (k > 0 && text[i] !== part[k]) k = fail[k - 1]!;
    if (text[i] === part[k]) k++;
    if (k === part.length) return i - part.length + 1;
  }
  return -1;
}

/** The rule a tool's results follow, with the config they are decided under. */
export interface ToolPolicy {
  rule: ToolRule | null;
  config: OffloadConfig;
  /** What the rule says, for decisions' reasons ("tool rule `web_*`: keep_last_n 3"); null: no rule. */
  note: string | null;
}

/** The rule that applies to `name` (first match wins), or null. */
export function ruleFor(rules: readonly ToolRule[], name: string): ToolRule | null {
  for (const rule of rules) if (matchesTool(rule.tool, name)) return rule;
  return null;
}

/** The longest pattern a reason quotes (a reason is stored with the session's decisions). */
const QUOTED_PATTERN_CHARS = 64;

/** A rule's pattern as a reason quotes it. */
function quoted(pattern: string): string {
  const short =
    pattern.length > QUOTED_PATTERN_CHARS ? `${pattern.slice(0, QUOTED_PATTERN_CHARS)}…` : pattern;
  return `tool rule \`${short}\``;
}

/** A rule as a reason names it: "tool rule `web_*`", with what it sets. */
export function describeRule(rule: ToolRule): string {
  const sets = Object.entries(rule)
    .filter(([k, v]) => k !== "tool" && v !== undefined)
    .map(([k, v]) => `${k} ${typeof v === "string" ? v : JSON.stringify(v)}`);
  return `${quoted(rule.tool)}${sets.length === 0 ? " (defaults)" : `: ${sets.join(", ")}`}`;
}

/** Each rule field that overrides a config field, and the field it overrides. */
const OVERRIDES = {
  compaction_size_chars: "tool_result_compaction_size_chars",
  large_offload_threshold_chars: "tool_result_large_offload_threshold_chars",
  keep_last_n: "tool_result_compaction_keep_last_n",
  offload_recall_probability: "tool_result_offload_recall_probability",
  first_delivery: "tool_result_first_delivery",
} as const satisfies Partial<Record<keyof ToolRule, keyof OffloadConfig>>;

/** The config a rule gives its tool's results: the turn's config with the rule's overrides. */
function ruledConfig(config: OffloadConfig, rule: ToolRule): OffloadConfig {
  const out: Record<string, unknown> = { ...config };
  for (const [from, to] of Object.entries(OVERRIDES)) {
    const value = rule[from as keyof typeof OVERRIDES];
    if (value !== undefined) out[to] = value;
  }
  return out as OffloadConfig;
}

/** What a turn learns of its rules once: each tool name's policy, each result's rank in its hot window. */
interface TurnRules {
  policies: Map<string, ToolPolicy>;
  ranks: Map<ToolResultSite, number> | null;
}

const perTurn = new WeakMap<TurnContext, TurnRules>();

function turnRules(ctx: TurnContext): TurnRules {
  let t = perTurn.get(ctx);
  if (t === undefined) {
    t = { policies: new Map(), ranks: null };
    perTurn.set(ctx, t);
  }
  return t;
}

const NO_RULE = (config: OffloadConfig): ToolPolicy => ({ rule: null, config, note: null });

/** The policy of a result's tool this turn (matched once per distinct tool name). */
export function policyOf(ctx: TurnContext, site: ToolResultSite): ToolPolicy {
  const rules = ctx.config.tool_result_tool_rules;
  if (rules.length === 0) return NO_RULE(ctx.config);
  const t = turnRules(ctx);
  let policy = t.policies.get(site.tool_name);
  if (policy === undefined) {
    const rule = ruleFor(rules, site.tool_name);
    policy =
      rule === null
        ? NO_RULE(ctx.config)
        : { rule, config: ruledConfig(ctx.config, rule), note: describeRule(rule) };
    t.policies.set(site.tool_name, policy);
  }
  return policy;
}

/** The config a result is decided under: the turn's, or its tool rule's. */
export function configOf(ctx: TurnContext, site: ToolResultSite): OffloadConfig {
  return policyOf(ctx, site).config;
}

/** A rule says this result is never stubbed, shortened nor batched. */
export function neverOffloaded(ctx: TurnContext, site: ToolResultSite): boolean {
  return policyOf(ctx, site).rule?.offload === "never";
}

/** The reason a "never" rule keeps a result full. */
export function neverReason(ctx: TurnContext, site: ToolResultSite): string {
  return `kept: ${quoted(policyOf(ctx, site).rule!.tool)} says never`;
}

/** A reason with the rule that applied to the result, when one did. */
export function ruledReason(ctx: TurnContext, site: ToolResultSite, reason: string): string {
  const { note, rule } = policyOf(ctx, site);
  // A record's reason (replayed, or carried into this turn's outcome) names its rule already.
  if (note === null || rule?.offload === "never" || reason.endsWith(note)) return reason;
  return `${reason}; ${note}`;
}

/**
 * How recent a result is within its hot window, 0 the most recent: among every result of the request,
 * or, where its tool's rule sets `keep_last_n`, among that tool's own results.
 */
function rankOf(ctx: TurnContext, site: ToolResultSite): number {
  const sites = ctx.analysis.sites;
  const policy = policyOf(ctx, site);
  if (policy.rule?.keep_last_n === undefined) return sites.length - 1 - site.index;
  const t = turnRules(ctx);
  if (t.ranks === null) {
    // One pass from the end: each ruled tool's results counted apart.
    const ranks = new Map<ToolResultSite, number>();
    const seen = new Map<string, number>();
    for (let i = sites.length - 1; i >= 0; i--) {
      const s = sites[i]!;
      if (policyOf(ctx, s).rule?.keep_last_n === undefined) continue;
      const n = seen.get(s.tool_name) ?? 0;
      ranks.set(s, n);
      seen.set(s.tool_name, n + 1);
    }
    t.ranks = ranks;
  }
  return t.ranks.get(site) ?? 0;
}

/** Among the most recent results kept full (the hot window: its tool's rule may set its own). */
export function isHot(ctx: TurnContext, site: ToolResultSite): boolean {
  return rankOf(ctx, site) < configOf(ctx, site).tool_result_compaction_keep_last_n;
}

/**
 * Still hot after the next call's new results whatever their tools: one more result pushes a result
 * of the whole window down one place, but one of another tool leaves a ruled tool's window as it is.
 */
export function staysHot(ctx: TurnContext, site: ToolResultSite): boolean {
  const n = configOf(ctx, site).tool_result_compaction_keep_last_n;
  const ruled = policyOf(ctx, site).rule?.keep_last_n !== undefined;
  return rankOf(ctx, site) < (ruled ? n : n - 1);
}

/** A decision with the rule its tool follows named, when one does. */
export function withRule(ctx: TurnContext, site: ToolResultSite, d: TurnDecision): TurnDecision {
  const rule = policyOf(ctx, site).rule;
  return rule === null ? d : { ...d, rule: rule.tool };
}

/** What one rule matched this turn, by action (the report's and the summary's `tool_rules`). */
export interface ToolRuleCount {
  tool: string;
  /** What the rule sets, as reasons name it. */
  says: string;
  results: number;
  kept: number;
  compacted: number;
  offloaded: number;
}

/** Per rule that matched a result this turn, in the rules' order. */
export function ruleCounts(ctx: TurnContext, decisions: readonly TurnDecision[]): ToolRuleCount[] {
  const rules = ctx.config.tool_result_tool_rules;
  if (rules.length === 0) return [];
  const counts = new Map<string, ToolRuleCount>();
  for (const d of decisions) {
    if (d.rule === undefined) continue;
    let c = counts.get(d.rule);
    if (c === undefined) {
      const rule = rules.find((r) => r.tool === d.rule)!;
      c = {
        tool: rule.tool,
        says: describeRule(rule),
        results: 0,
        kept: 0,
        compacted: 0,
        offloaded: 0,
      };
      counts.set(d.rule, c);
    }
    c.results++;
    c[d.action]++;
  }
  // In the rules' order (a pattern given twice counts once: its first rule is the one that matches).
  return [...new Set(rules.map((r) => r.tool))].flatMap((tool) => {
    const c = counts.get(tool);
    return c === undefined ? [] : [c];
  });
}
