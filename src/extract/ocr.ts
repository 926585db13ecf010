/**
 * The OCR port. OCR is off unless a caller turns it on and plugs in an engine and a model source: engines are
 * heavy (tesseract-wasm ≈ 8–9 s of CPU per page in workerd, wasm that must be imported as a module because
 * Workers forbid compiling wasm from bytes) and models are megabytes read from R2, so neither belongs in the
 * default bundle. With OCR off an image is unsupported (send it natively); with OCR on but no engine or no
 * model, the dependency is missing.
 */
import type { ImageFormat } from "./types.ts";

export interface OcrImage {
  bytes: Uint8Array;
  format: ImageFormat;
  width?: number | undefined;
  height?: number | undefined;
}

export interface OcrEngine {
  readonly name: string;
  /** Image formats the engine decodes itself (a format outside this list is unsupported, not failed). */
  readonly formats: readonly ImageFormat[];
  /** Recognised text. Throwing means the image could not be read (reported as corrupt). */
  recognize(image: OcrImage, model: Uint8Array): Promise<string>;
}

export interface OcrModelSource {
  readonly name: string;
  /** The model's bytes, or null when it is absent. */
  load(): Promise<Uint8Array | null>;
}

export interface OcrOptions {
  enabled: boolean;
  engine?: OcrEngine | undefined;
  model?: OcrModelSource | undefined;
  /** Largest image accepted, in pixels (width × height, when the header gives them): OCR cost grows with it. */
  max_pixels?: number | undefined;
}

export const DEFAULT_OCR_MAX_PIXELS = 25_000_000;

/** The structural part of an R2 bucket this needs (so the library does not depend on Workers types). */
export interface ModelBucket {
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

/**
 * A model read once from a bucket (R2) and kept for the life of the source: create it at module scope in a
 * Worker so every request of an isolate shares one copy. An absent model or a failed read is not cached.
 */
export function bucketModelSource(bucket: ModelBucket, key: string): OcrModelSource {
  let pending: Promise<Uint8Array | null> | undefined;
  return {
    name: `bucket:${key}`,
    load() {
      if (pending) return pending;
      const current = (async () => {
        const object = await bucket.get(key);
        return object === null ? null : new Uint8Array(await object.arrayBuffer());
      })();
      pending = current;
      // Only a model that was read is kept: an absent one may be uploaded later, a failed read retried.
      current.then(
        (model) => {
          if (model === null && pending === current) pending = undefined;
        },
        () => {
          if (pending === current) pending = undefined;
        },
      );
      return current;
    },
  };
}

/** A model already in memory (tests, Node callers that read it from disk). */
export function bytesModelSource(bytes: Uint8Array | null, name = "bytes"): OcrModelSource {
  return { name, load: async () => bytes };
}
