/**
 * Images read for OCR in JavaScript (workerd has no canvas and no createImageBitmap): PNG (png-decode.ts)
 * and JPEG (jpeg-decode.ts), both streamed into a buffer the engine provides, so an image costs its 8-bit
 * RGBA (4 bytes a pixel) and a few rows, whatever its bit depth, interlacing or progression.
 *
 * Uploads are hostile, so the work is bounded before it is done: the header's pixel count is checked against
 * the limit (the picture's, not the JPEG's padded blocks: a PNG and a JPEG of the same picture are judged
 * alike; over it but within it at half resolution, a PNG or baseline JPEG is halved while it decodes), and
 * every decoder's work follows from the declared size, never from what the data does.
 */
import { AttachmentError, ExtractionFailedError } from "./errors.ts";
import { jpegRaster } from "./jpeg-decode.ts";
import type { OcrRaster } from "./ocr.ts";
import { pngRaster } from "./png-decode.ts";
import type { ImageFormat } from "./types.ts";

/** 8-bit RGBA pixels, row by row. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Formats imageRaster reads. */
export { DECODED_FORMATS } from "./types.ts";

/** Any failure of a decoder as the typed error: a decoder's own bug on hostile bytes is still `corrupt`. */
function typed(format: ImageFormat, run: () => void): void {
  try {
    run();
  } catch (cause) {
    if (cause instanceof AttachmentError) throw cause;
    throw new ExtractionFailedError(
      format,
      "corrupt",
      `the ${format} image could not be decoded`,
      cause,
    );
  }
}

/**
 * The image's header read and checked against `maxPixels` (`too_large` over it, `corrupt` when it is no
 * image of its format); `paint` decodes it. Throws ExtractionFailedError.
 */
export function imageRaster(bytes: Uint8Array, format: ImageFormat, maxPixels: number): OcrRaster {
  let raster: OcrRaster | undefined;
  typed(format, () => {
    if (format === "png") raster = pngRaster(bytes, maxPixels);
    else if (format === "jpeg") raster = jpegRaster(bytes, maxPixels);
    else throw new ExtractionFailedError(format, "corrupt", `${format} images are not decoded`);
  });
  const r = raster!;
  return {
    width: r.width,
    height: r.height,
    ...(r.from === undefined ? {} : { from: r.from }),
    paint: (target) => typed(format, () => r.paint(target)),
  };
}

/** An image decoded into a buffer of its own (an engine that cannot lend its memory, tests). */
export function decodeImage(bytes: Uint8Array, format: ImageFormat, maxPixels: number): RgbaImage {
  const raster = imageRaster(bytes, format, maxPixels);
  const data = new Uint8Array(raster.width * raster.height * 4);
  raster.paint(() => data);
  return { width: raster.width, height: raster.height, data };
}
