/** A small deterministic generator (mulberry32): the same seed plays the same run. */
export { random } from "../../src/eval/random.ts";
