/**
 * The OCR engine: Tesseract's LSTM recogniser compiled to WebAssembly (the tesseract-wasm package), behind the
 * OcrEngine port. It runs in Node and in workerd under production rules (no eval, no `new Function`, no wasm
 * compiled from bytes): the caller hands it an already compiled `WebAssembly.Module` — a Worker imports the
 * `.wasm` file as a module, which wrangler uploads precompiled — and it never fetches anything.
 *
 * tesseract-wasm's `createOCREngine` only takes the wasm's bytes and compiles them itself; its Emscripten
 * loader is not exported. So while one engine is created, `WebAssembly.instantiate` is wrapped for a single
 * call: an empty byte array (which no caller could mean: it is no module) is answered by instantiating the
 * precompiled module instead. Every other call passes through, and the wrapper is removed before the engine
 * is used.
 *
 * One engine per isolate, reused across requests; recognising an image is one synchronous run (decode, load,
 * layout, estimate, recognise, clear) with no await inside, so concurrent requests never interleave in it.
 *
 * Memory is what an isolate runs out of first, so an image is decoded straight into the engine's own image
 * buffer (tesseract-wasm's `Image`, which its loadImage would otherwise fill from a copy in JavaScript):
 * the image is never whole outside WebAssembly. Tesseract then copies it once (SetImage keeps its own Pix)
 * and works on a grey and a binary version: about 8 bytes a pixel at the peak, the figure the default pixel
 * ceiling is derived from (ocr.ts). WebAssembly memory never shrinks: after an image that grew it past
 * `max_heap_bytes` the instance is dropped, and the next image starts a new one (≈ 0.1 s to instantiate and
 * load the model again), so an idle isolate holds the engine at its resting size, not at its largest image's.
 */
/// <reference path="./tesseract-wasm.d.ts" />
import type { OCREngine, TextItem } from "tesseract-wasm";
import {
  AttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
} from "./errors.ts";
import {
  DEFAULT_OCR_MAX_HEAP_BYTES,
  halfNote,
  type OcrEngine,
  type OcrImage,
  type OcrPixels,
  type OcrRaster,
  type OcrRunLimits,
  type OcrText,
} from "./ocr.ts";
import { pixelsRaster } from "./raster.ts";
import { DECODED_FORMATS, type DetectedFormat } from "./types.ts";

/** The image decoders, evaluated on the first image rather than when a Worker starts. */
let decoders: Promise<typeof import("./image-decode.ts")> | undefined;
const loadDecoders = () => (decoders ??= import("./image-decode.ts"));

export interface TesseractEngineOptions {
  /** The compiled `tesseract-core.wasm` of the tesseract-wasm package, or a loader of it (called once). */
  wasm: WebAssembly.Module | (() => Promise<WebAssembly.Module>);
  /** Drop the instance after an image that left its memory larger than this (default 48 MiB). */
  max_heap_bytes?: number;
}

/**
 * A line's box as the engine reports it (tesseract-wasm's `IntRect`), declared here so the public types never
 * name the optional peer's module.
 */
export interface LineRect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** What the estimate of recognition CPU is calibrated on (see estimateRecognitionMs). */
const LSTM_LINE_HEIGHT = 36;

/**
 * Estimated CPU of recognising the lines found by layout analysis, in milliseconds. The LSTM reads each line
 * scaled to a fixed height, so its work grows with the lines' total width at that height; the constant was
 * measured on the fixtures in workerd and Node (about 0.05 ms per column, rounded up). Workers have no CPU
 * clock inside a request, so a budget can only be checked against an estimate: the platform's own CPU
 * limit stays the hard stop.
 */
export function estimateRecognitionMs(lines: readonly { rect: LineRect }[]): number {
  let columns = 0;
  for (const { rect } of lines) {
    const h = Math.max(1, rect.bottom - rect.top);
    columns += ((rect.right - rect.left) * LSTM_LINE_HEIGHT) / h;
  }
  return Math.ceil(columns * MS_PER_COLUMN);
}
const MS_PER_COLUMN = 0.05;

interface Loaded {
  engine: OCREngine;
  model: Uint8Array | null;
  /** Destroyed after a large image: whoever still holds it must get the next instance. */
  dead: boolean;
}

/** A URL class that resolves against `file:///` when the base is missing or invalid. */
class TolerantUrl extends URL {
  constructor(url: string | URL, base?: string | URL) {
    super(url, URL.canParse(url, base) ? base : "file:///");
  }
}

/** The engine cannot start, which is not the image's fault: the caller sends it natively. */
function engineMissing(cause: unknown, message = "the OCR engine could not be started"): Error {
  if (cause instanceof AttachmentError) return cause;
  return new ExtractionDependencyMissingError("unknown", "ocr_engine", message, cause);
}

/**
 * Instantiate tesseract-wasm from a precompiled module. Three globals are swapped, each for as short as it can
 * be (see the file comment): `URL`, during the synchronous start of Emscripten's loader only, because it
 * resolves the wasm's file name against `import.meta.url`, which is no URL in a bundled Worker (the name is
 * never fetched); `console.warn`, in that same synchronous start, because Emscripten binds its error printer
 * to it then; and `WebAssembly.instantiate`, until the instance exists, answering only the empty byte array.
 */
async function instantiate(module: WebAssembly.Module): Promise<OCREngine> {
  // Imported here, not at the top: its code is evaluated on the first image, not when a Worker starts.
  let createOCREngine: typeof import("tesseract-wasm").createOCREngine;
  try {
    ({ createOCREngine } = await import("tesseract-wasm"));
  } catch (cause) {
    throw engineMissing(cause, "the OCR engine (tesseract-wasm) could not be loaded");
  }
  const wasm = WebAssembly as unknown as {
    instantiate: (source: unknown, imports?: unknown) => Promise<unknown>;
  };
  const original = wasm.instantiate;
  wasm.instantiate = (source: unknown, imports?: unknown) => {
    if (source instanceof Uint8Array && source.byteLength === 0)
      return original.call(WebAssembly, module, imports).then((instance) => ({ instance, module }));
    return original.call(WebAssembly, source, imports);
  };
  const scope = globalThis as unknown as { URL: typeof URL };
  const [url, warn] = [scope.URL, console.warn];
  let pending: Promise<OCREngine>;
  try {
    scope.URL = TolerantUrl;
    // Tesseract's per-image chatter ("Estimating resolution as …") is dropped; anything else passes on.
    console.warn = (...args: unknown[]) => {
      if (!/^Estimating resolution/.test(String(args[0]))) warn(...args);
    };
    pending = createOCREngine({ wasmBinary: new ArrayBuffer(0) });
  } finally {
    scope.URL = url;
    console.warn = warn;
  }
  try {
    return await pending;
  } catch (cause) {
    throw engineMissing(cause);
  } finally {
    wasm.instantiate = original;
  }
}

function heapBytes(engine: OCREngine): number {
  const lib = (engine as unknown as { _tesseractLib?: { HEAPU8?: Uint8Array } })._tesseractLib;
  return lib?.HEAPU8?.length ?? 0;
}

/** The parts of tesseract-wasm's OCREngine below its public API that loading an image in place needs. */
interface EngineInternals {
  _tesseractLib?: {
    HEAPU8?: Uint8Array;
    Image?: new (width: number, height: number) => { data(): Uint32Array; delete(): void };
  };
  _engine?: { loadImage(image: unknown): { error?: unknown }; clearImage(): void };
  _imageLoaded?: boolean;
}

/**
 * The raster decoded into tesseract-wasm's own image buffer, then loaded. Without those internals (another
 * version of the package), through the public loadImage and a JavaScript copy (4 bytes a pixel more).
 */
function loadRaster(engine: OCREngine, raster: OcrRaster): void {
  const inner = engine as unknown as EngineInternals;
  const Image = inner._tesseractLib?.Image;
  const native = inner._engine;
  if (typeof Image !== "function" || native === undefined) {
    const data = new Uint8Array(raster.width * raster.height * 4);
    raster.paint(() => data);
    engine.loadImage({
      data: new Uint8ClampedArray(data.buffer),
      width: raster.width,
      height: raster.height,
    } as Parameters<OCREngine["loadImage"]>[0]);
    return;
  }
  // The previous image's memory first, as loadImage does: the new one may reuse it.
  native.clearImage();
  inner._imageLoaded = false;
  const image = new Image(raster.width, raster.height);
  try {
    raster.paint(() => {
      // Taken when the decoder is ready: nothing runs in WebAssembly before it has written, so the view stays
      // valid (memory that grows detaches the views on the old buffer).
      const words = image.data();
      return new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
    });
    if (native.loadImage(image).error) throw new Error("tesseract-wasm could not load the image");
    inner._imageLoaded = true;
  } finally {
    image.delete();
  }
}

/** Mean word confidence weighted by the words' lengths (0–1), or 0 when nothing was read. */
function confidenceOf(words: readonly TextItem[]): number {
  let chars = 0;
  let sum = 0;
  for (const w of words) {
    const n = w.text.trim().length;
    chars += n;
    sum += n * w.confidence;
  }
  return chars === 0 ? 0 : Math.round((sum / chars) * 1000) / 1000;
}

/** The engine, and the size of its WebAssembly memory (0 before the first image): what it holds of an isolate. */
export type TesseractOcrEngine = OcrEngine & { heapBytes(): number };

/** The OCR engine over tesseract-wasm. */
export function tesseractEngine(options: TesseractEngineOptions): TesseractOcrEngine {
  const maxHeap = options.max_heap_bytes ?? DEFAULT_OCR_MAX_HEAP_BYTES;
  let module: Promise<WebAssembly.Module> | undefined;
  let current: Promise<Loaded> | undefined;

  const load = (): Promise<Loaded> => {
    module ??=
      options.wasm instanceof WebAssembly.Module
        ? Promise.resolve(options.wasm)
        : options.wasm().catch((e: unknown) => {
            module = undefined;
            throw engineMissing(e, "the OCR engine's wasm could not be loaded");
          });
    const pending = module
      .then(instantiate)
      .then((engine): Loaded => ({ engine, model: null, dead: false }))
      .catch((e: unknown) => {
        if (current === pending) current = undefined;
        throw e;
      });
    current = pending;
    return pending;
  };

  const run = (
    loaded: Loaded,
    raster: OcrRaster,
    format: DetectedFormat,
    limits: OcrRunLimits | undefined,
  ): OcrText => {
    const { engine } = loaded;
    try {
      loadRaster(engine, raster);
      if (limits?.cpu_ms !== undefined) {
        const estimate = estimateRecognitionMs(engine.getBoundingBoxes("line"));
        if (estimate > limits.cpu_ms)
          throw new ExtractionFailedError(
            format,
            "too_large",
            `recognising this image would take about ${estimate} ms of CPU, over the OCR budget of ${limits.cpu_ms} ms`,
          );
      }
      const words = engine.getTextBoxes("word");
      const text = engine.getText();
      return { text, confidence: confidenceOf(words), note: halfNote(raster) };
    } finally {
      engine.clearImage();
      if (heapBytes(engine) > maxHeap) {
        // Memory grown by a large image stays with the instance: let this one go.
        engine.destroy();
        loaded.dead = true;
        current = undefined;
      }
    }
  };

  const ready = async (model: Uint8Array): Promise<Loaded> => {
    let loaded = await (current ?? load());
    while (loaded.dead) loaded = await (current ?? load());
    last = loaded;
    if (loaded.model !== model) {
      loaded.engine.loadModel(model);
      loaded.model = model;
    }
    return loaded;
  };

  let last: Loaded | undefined;
  return {
    name: "tesseract-wasm",
    formats: DECODED_FORMATS,
    heapBytes: () => (last === undefined || last.dead ? 0 : heapBytes(last.engine)),
    async recognize(image: OcrImage, model: Uint8Array, limits?: OcrRunLimits): Promise<OcrText> {
      const { imageRaster } = await loadDecoders();
      // The header is checked before the engine is started: an image over the limits costs nothing.
      const raster = imageRaster(image.bytes, image.format, limits?.max_pixels ?? Infinity);
      const loaded = await ready(model);
      // From here on everything is synchronous: no other request can touch the engine until it is done.
      return run(loaded, raster, image.format, limits);
    },
    async recognizePixels(
      pixels: OcrPixels,
      model: Uint8Array,
      limits?: OcrRunLimits,
    ): Promise<OcrText> {
      const loaded = await ready(model);
      return run(loaded, pixelsRaster(pixels), "pdf", limits);
    },
    async recognizeRaster(
      raster: OcrRaster,
      model: Uint8Array,
      limits?: OcrRunLimits,
    ): Promise<OcrText> {
      const loaded = await ready(model);
      return run(loaded, raster, "pdf", limits);
    },
  };
}
