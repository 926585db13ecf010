/**
 * OCR for `edge-offload serve` (Node), which has neither the Worker's precompiled wasm module nor its
 * bucket: the engine is the installed tesseract-wasm package, its `.wasm` read and compiled from bytes
 * (Node allows it) on the first image, and a language's trained data is `<language>.traineddata` (gzipped
 * or not, also as `<language>.traineddata.gz`) in a local directory, OFFLOAD_OCR_MODEL_DIR.
 *
 * tesseract-wasm is an optional peer dependency, as unpdf: without it an image answers
 * `extraction_dependency_missing` (`ocr_engine`), the answer a Worker gives with OCR off, and the caller
 * sends the image natively. A language whose file is not in the directory answers the Worker's
 * `extraction_dependency_missing` (`ocr_model`); the file is looked up again on the next image, so one
 * added later is read without a restart (a model read once is kept, as in an isolate).
 */
import { OffloadError } from "../errors.ts";
import { ExtractionDependencyMissingError } from "./errors.ts";
import { bucketModelSource, type ModelBucket, type OcrEngine } from "./ocr.ts";
import type { OcrHost } from "./ocr-service.ts";
import { tesseractEngine } from "./ocr-tesseract.ts";

/** The engine's wasm (Tesseract compiled with SIMD, as the Worker imports it). */
const WASM_FILE = "tesseract-core.wasm";

/** What this needs of Node's fs and path (loaded by name: the file is type-checked with the Worker's). */
interface NodeFs {
  readFile(path: string | URL): Promise<Uint8Array>;
  stat(path: string): Promise<{ isDirectory(): boolean }>;
  access(path: string, mode: number): Promise<void>;
  constants: { R_OK: number; X_OK: number };
}
interface NodePath {
  resolve(...paths: string[]): string;
  join(...paths: string[]): string;
}
const FS = "node:fs/promises";
const PATH = "node:path";
const fs = () => import(/* @vite-ignore */ FS) as Promise<NodeFs>;
const path = () => import(/* @vite-ignore */ PATH) as Promise<NodePath>;

/** Where a package's main module is (import.meta.resolve: Node ≥ 20.6), or null when not installed. */
function resolvePackage(name: string): string | null {
  try {
    return (import.meta as unknown as { resolve(name: string): string }).resolve(name);
  } catch {
    return null;
  }
}

/** A language as OFFLOAD_OCR_LIMITS admits it (OcrLimitsSchema): a file name, never a path. */
const LANGUAGE = /^[a-z][a-z0-9_]{1,31}$/;

/** The file names a language's trained data may have in the directory, in the order they are tried. */
const modelFiles = (language: string): string[] => [
  `${language}.traineddata`,
  `${language}.traineddata.gz`,
];

/**
 * tesseract-wasm's engine compiled from the installed package's file (the package's `exports` hide it:
 * it is found beside the package's main module). Not installed: `extraction_dependency_missing`.
 * `resolve` finds a package's main module (a test's stands for a project without the package).
 */
export async function packagedTesseractWasm(
  resolve: (name: string) => string | null = resolvePackage,
): Promise<WebAssembly.Module> {
  const main = resolve("tesseract-wasm");
  if (main === null)
    throw new ExtractionDependencyMissingError(
      "unknown",
      "ocr_engine",
      "the OCR engine is not installed: npm install tesseract-wasm (an optional peer of edge-offload)",
    );
  let bytes: Uint8Array;
  try {
    bytes = await (await fs()).readFile(new URL(WASM_FILE, main));
  } catch (cause) {
    throw new ExtractionDependencyMissingError(
      "unknown",
      "ocr_engine",
      `the OCR engine's ${WASM_FILE} could not be read from the installed tesseract-wasm`,
      cause,
    );
  }
  // Compiled off the main thread (the Worker's types have no WebAssembly.compile: Node has).
  const wasm = WebAssembly as unknown as { compile(b: Uint8Array): Promise<WebAssembly.Module> };
  return wasm.compile(bytes);
}

/**
 * A directory as the bucket bucketModelSource reads (so a model is read once, inflated once when gzipped,
 * and an absent one is looked up again): `get(language)` is the first of the language's files that exists.
 */
function directoryBucket(dir: string): ModelBucket {
  return {
    async get(language) {
      if (!LANGUAGE.test(language)) return null;
      const [{ readFile }, { join }] = await Promise.all([fs(), path()]);
      for (const name of modelFiles(language)) {
        let bytes: Uint8Array;
        try {
          bytes = await readFile(join(dir, name));
        } catch (e) {
          if ((e as { code?: string }).code === "ENOENT") continue;
          throw e; // unreadable: a failed load (not cached), the same answer as an absent model
        }
        return { arrayBuffer: async () => bytes.slice().buffer };
      }
      return null;
    },
  };
}

export interface NodeOcrOptions {
  /** The directory of the trained data (OFFLOAD_OCR_MODEL_DIR), resolved against the working directory. */
  modelDir: string;
  /** The engine's compiled wasm (default: packagedTesseractWasm); called once, on the first image. */
  wasm?: () => Promise<WebAssembly.Module>;
}

/** serve's OCR: one engine per server, created on the first image, and the directory's models. */
export async function nodeOcrHost(options: NodeOcrOptions): Promise<OcrHost> {
  const dir = (await path()).resolve(options.modelDir);
  const model = bucketModelSource(directoryBucket(dir), (language) => language);
  let engine: OcrEngine | undefined;
  return {
    engine() {
      engine ??= tesseractEngine({ wasm: options.wasm ?? (() => packagedTesseractWasm()) });
      return engine;
    },
    // Named as the Worker's source is, by the file and not the machine's path: the name is in cache keys.
    model: () => ({ name: "dir:{lang}.traineddata", load: model.load }),
  };
}

const misconfigured = (message: string, cause?: unknown) =>
  new OffloadError("internal", `service misconfigured: OFFLOAD_OCR_MODEL_DIR ${message}`, {
    cause,
  });

/**
 * The model directory checked at startup: it must be a directory serve can read (a server that could
 * never OCR is not started). Answers the languages whose trained data is not in it (OCR of those answers
 * `ocr_model` missing until the file is added).
 */
export async function checkModelDir(dir: string, languages: readonly string[]): Promise<string[]> {
  const [{ stat, access, constants }, { resolve, join }] = await Promise.all([fs(), path()]);
  const where = resolve(dir);
  let isDir: boolean;
  try {
    isDir = (await stat(where)).isDirectory();
    if (isDir) await access(where, constants.R_OK | constants.X_OK);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    throw misconfigured(
      code === "ENOENT" ? `${where} does not exist` : `${where} cannot be read (${code})`,
      cause,
    );
  }
  if (!isDir) throw misconfigured(`${where} is not a directory`);
  const missing: string[] = [];
  for (const language of languages) {
    let found = false;
    for (const name of modelFiles(language)) {
      try {
        await access(join(where, name), constants.R_OK);
        found = true;
        break;
      } catch {}
    }
    if (!found) missing.push(language);
  }
  return missing;
}

/** Whether the tesseract-wasm package can be found (not loaded: that waits for the first image). */
export const tesseractWasmInstalled = (): boolean => resolvePackage("tesseract-wasm") !== null;
