// The storage tests' builders live beside the contract suites that use them (src/contract/records.ts).
export * from "../../src/contract/records.ts";
