/** A call's bill at the fake's own prices (prices.ts): what the provider's invoice would say. */
import { fakePrice } from "./prices.ts";

/** Billed tokens by rate. OpenAI's cached tokens are `cache_read`; its prompt's rest is `input`. */
export interface BillTokens {
  input: number;
  cache_read: number;
  cache_write_5m: number;
  cache_write_1h: number;
  output: number;
}

export const NO_TOKENS: Readonly<BillTokens> = {
  input: 0,
  cache_read: 0,
  cache_write_5m: 0,
  cache_write_1h: 0,
  output: 0,
};

export function promptTokens(t: BillTokens): number {
  return t.input + t.cache_read + t.cache_write_5m + t.cache_write_1h;
}

/**
 * USD of a call's tokens for `model` at the fake's own prices, or null for a model it does not price.
 * A prompt past the model's long-context threshold bills the whole call at its long rates.
 */
export function billUsd(model: string, t: BillTokens): number | null {
  const p = fakePrice(model);
  if (p === null) return null;
  const long = p.long !== undefined && promptTokens(t) > p.long.above ? p.long : null;
  const inFactor = long?.input ?? 1;
  return (
    ((t.input * p.input +
      t.cache_read * p.read +
      t.cache_write_5m * p.write_5m +
      t.cache_write_1h * p.write_1h) *
      inFactor +
      t.output * p.output * (long?.output ?? 1)) /
    1e6
  );
}

/** Sum of token counts. */
export function addTokens(a: BillTokens, b: BillTokens): BillTokens {
  return {
    input: a.input + b.input,
    cache_read: a.cache_read + b.cache_read,
    cache_write_5m: a.cache_write_5m + b.cache_write_5m,
    cache_write_1h: a.cache_write_1h + b.cache_write_1h,
    output: a.output + b.output,
  };
}
