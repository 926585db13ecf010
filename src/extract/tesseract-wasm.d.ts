// The part of tesseract-wasm this project uses. The package ships types, but its `exports` map does not name
// them, so TypeScript's Node resolution cannot find them.
declare module "tesseract-wasm" {
  export interface IntRect {
    left: number;
    top: number;
    right: number;
    bottom: number;
  }
  export interface BoxItem {
    rect: IntRect;
    flags: number;
  }
  export interface TextItem extends BoxItem {
    /** 0–1. */
    confidence: number;
    text: string;
  }
  export interface OCREngine {
    destroy(): void;
    setVariable(name: string, value: string): void;
    loadModel(model: Uint8Array | ArrayBuffer): void;
    loadImage(image: { data: Uint8ClampedArray; width: number; height: number }): void;
    clearImage(): void;
    getBoundingBoxes(unit: "line" | "word"): BoxItem[];
    getTextBoxes(unit: "line" | "word"): TextItem[];
    getText(): string;
  }
  export function createOCREngine(options?: {
    wasmBinary?: Uint8Array | ArrayBuffer;
  }): Promise<OCREngine>;
}
