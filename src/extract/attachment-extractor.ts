/**
 * The core's AttachmentExtractor port over this extraction engine: documents within the config's
 * limits, images through OCR when it is plugged in, both through the tenant's cache (cache.ts). The
 * library's `compact` and the service wire it; the core never imports the engine.
 */
import type { AttachmentExtractor } from "../core/ports.ts";
import { type Extractor, extractCached } from "./cache.ts";
import type { OcrOptions } from "./ocr.ts";

/** How the attachment policy extracts: OCR for image placeholders, and the extractor itself. */
export interface AttachmentOptions {
  /**
   * OCR for image placeholders: off unless an engine and a model source are plugged in (ocr.ts).
   */
  ocr?: OcrOptions | undefined;
  /** The extractor: extractText unless a test or an embedder plugs in another. */
  extract?: Extractor | undefined;
}

/**
 * The attachment policy's extractor over this engine (what `compact` uses by default), with OCR or
 * another extractor plugged in.
 *
 * @example
 * const ocr = { enabled: true, engine, model: bytesModelSource(modelBytes) };
 * const extractor = attachmentExtractor({ ocr });
 * await compact({ request, session, store, config, extractor });
 */
export function attachmentExtractor(options: AttachmentOptions = {}): AttachmentExtractor {
  const { ocr, extract } = options;
  return {
    ocr: ocr?.enabled === true,
    async extract(request) {
      const out = await extractCached({
        attachment: request.attachment,
        options:
          request.kind === "image"
            ? { ocr }
            : { max_pages: request.max_pages, max_chars: request.max_chars },
        tenant: request.tenant,
        cache: request.cache,
        extract,
      });
      return { outcome: out.outcome, cached: out.cached, format: out.format, bytes: out.bytes };
    },
  };
}
