/**
 * One OCR run as extraction sees it, for an image file and for a scanned PDF page alike: load the model of the
 * language, call the engine under the limits, and accept its text only when there is some and its confidence
 * clears the deployment's threshold (a bad OCR must never replace a good image).
 */
import {
  AttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
} from "./errors.ts";
import {
  DEFAULT_OCR_MIN_CONFIDENCE,
  type OcrOptions,
  type OcrRunLimits,
  type OcrText,
  ocrRunLimits,
  ocrTextOf,
} from "./ocr.ts";
import type { DetectedFormat } from "./types.ts";

/** The model of the options' language, or the typed "missing dependency" error. */
export async function loadOcrModel(
  ocr: OcrOptions,
  format: DetectedFormat,
): Promise<{ model: Uint8Array; limits: OcrRunLimits }> {
  const source = ocr.model!;
  const limits = ocrRunLimits(ocr);
  let model: Uint8Array | null;
  try {
    model = await source.load(limits.language);
  } catch (cause) {
    throw new ExtractionDependencyMissingError(
      format,
      "ocr_model",
      `the OCR model (${source.name}, ${limits.language}) could not be loaded`,
      cause,
    );
  }
  if (model === null)
    throw new ExtractionDependencyMissingError(
      format,
      "ocr_model",
      `OCR is on but its model (${source.name}, ${limits.language}) is absent`,
    );
  return { model, limits };
}

/**
 * Run the engine and judge its answer: text trimmed, `empty` when there is none, `low_confidence` under the
 * threshold. `where` names the image in messages ("the image", "page 3").
 */
export async function recognized(
  ocr: OcrOptions,
  format: DetectedFormat,
  where: string,
  run: () => Promise<string | OcrText>,
): Promise<OcrText> {
  let answer: OcrText;
  try {
    answer = ocrTextOf(await run());
  } catch (cause) {
    // An engine that could not start knows no format: the error names the file's.
    if (cause instanceof ExtractionDependencyMissingError && cause.format === "unknown")
      throw new ExtractionDependencyMissingError(format, cause.dependency, cause.message, cause);
    if (cause instanceof AttachmentError) throw cause;
    throw new ExtractionFailedError(
      format,
      "corrupt",
      `the OCR engine ${ocr.engine!.name} could not read ${where}`,
      cause,
    );
  }
  const text = answer.text.trim();
  // Read at half resolution, a failure says so: the user learns why the picture may have read worse.
  const what = answer.note === undefined ? where : `${where} (${answer.note})`;
  if (text === "") throw new ExtractionFailedError(format, "empty", `OCR found no text in ${what}`);
  const floor = ocr.min_confidence ?? DEFAULT_OCR_MIN_CONFIDENCE;
  if (answer.confidence !== undefined && answer.confidence < floor)
    throw new ExtractionFailedError(
      format,
      "low_confidence",
      `OCR read ${what} with a confidence of ${answer.confidence}, under the ${floor} required: send it natively`,
    );
  return { text, confidence: answer.confidence, note: answer.note };
}
