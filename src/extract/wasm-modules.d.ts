// A `.wasm` import is a compiled module: wrangler uploads it as a CompiledWasm module (its default rule for
// `**/*.wasm`), and @cloudflare/vitest-plugin serves it the same way in the workerd tests.
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
