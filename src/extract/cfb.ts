/**
 * Just enough of the OLE Compound File format to tell its kinds apart: legacy Word (.doc), Excel (.xls) and
 * PowerPoint (.ppt) files, and encrypted OOXML (a password-protected .docx/.xlsx is an OLE file holding
 * `EncryptionInfo` and `EncryptedPackage` streams). Only the directory's stream names are read.
 */
import type { DetectedFormat } from "./types.ts";

export const OLE_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] as const;

const END_OF_CHAIN = 0xfffffffe;
const MAX_DIRECTORY_SECTORS = 64;

const u16 = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8);
const u32 = (b: Uint8Array, o: number): number =>
  (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;

/** Stream and storage names of the root directory (at most 64 directory sectors are read); null if unreadable. */
export function oleEntryNames(b: Uint8Array): string[] | null {
  if (b.length < 512) return null;
  for (let i = 0; i < 8; i++) if (b[i] !== OLE_MAGIC[i]) return null;
  const shift = u16(b, 0x1e);
  if (shift !== 9 && shift !== 12) return null;
  const size = 1 << shift;
  const offsetOf = (sector: number): number => (sector + 1) * size;
  const fatSectors: number[] = [];
  for (let i = 0; i < 109; i++) {
    const s = u32(b, 0x4c + i * 4);
    if (s >= 0xfffffffa) break;
    fatSectors.push(s);
  }
  const next = (sector: number): number => {
    const perSector = size / 4;
    const fat = fatSectors[Math.floor(sector / perSector)];
    if (fat === undefined) return END_OF_CHAIN;
    const o = offsetOf(fat) + (sector % perSector) * 4;
    return o + 4 <= b.length ? u32(b, o) : END_OF_CHAIN;
  };
  const names: string[] = [];
  let sector = u32(b, 0x30);
  for (let n = 0; n < MAX_DIRECTORY_SECTORS && sector < 0xfffffffa; n++) {
    const base = offsetOf(sector);
    if (base + size > b.length) break;
    for (let e = base; e < base + size; e += 128) {
      const type = b[e + 0x42];
      const nameLen = u16(b, e + 0x40);
      if (type === 0 || nameLen < 2 || nameLen > 64) continue;
      let name = "";
      for (let k = 0; k < nameLen - 2; k += 2) name += String.fromCharCode(u16(b, e + k));
      names.push(name);
    }
    sector = next(sector);
  }
  return names;
}

/** What kind of OLE file this is, by its stream names. */
export function oleKind(b: Uint8Array): DetectedFormat {
  const names = oleEntryNames(b);
  if (names === null) return "ole";
  const has = (n: string): boolean => names.some((x) => x.toLowerCase() === n.toLowerCase());
  if (has("EncryptedPackage") || has("EncryptionInfo")) return "ooxml_encrypted";
  if (has("WordDocument")) return "doc";
  if (has("Workbook") || has("Book")) return "xls";
  if (has("PowerPoint Document")) return "ppt";
  return "ole";
}
