/**
 * tesseract-wasm's compiled engine, imported as a module so that wrangler bundles it precompiled (production
 * Workers refuse to compile WebAssembly from bytes). The package's `exports` map hides its `.wasm` files, hence
 * the path into node_modules. Only the Worker imports this file, and only lazily (ocr-service.ts): plain Node
 * cannot import a `.wasm` file, and the published library does not include it.
 */
/// <reference path="./wasm-modules.d.ts" />
import tesseractCore from "../../node_modules/tesseract-wasm/dist/tesseract-core.wasm";

export default tesseractCore;
