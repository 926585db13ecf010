/**
 * An OOXML package (DOCX/XLSX): the ZIP directory plus guarded access to its XML parts and relationships.
 * Every part read is charged to one inflate budget, so the caps hold across the whole file.
 */
import { ExtractionFailedError } from "./errors.ts";
import type { ResolvedExtractOptions } from "./options.ts";
import type { DocumentFormat } from "./types.ts";
import { attr, decodeXmlBytes, scanXml, XmlError } from "./xml.ts";
import { listZip, readZipEntry, UnzipBudget, type ZipEntry, ZipFormatError } from "./zip.ts";

export class OoxmlPackage {
  readonly format: DocumentFormat;
  private readonly bytes: Uint8Array;
  private readonly entries: Map<string, ZipEntry>;
  private readonly budget: UnzipBudget;

  constructor(
    format: DocumentFormat,
    bytes: Uint8Array,
    options: ResolvedExtractOptions,
    entries?: ZipEntry[],
  ) {
    this.format = format;
    this.bytes = bytes;
    this.budget = new UnzipBudget(options, format);
    let list = entries;
    if (list === undefined || list.length > options.max_zip_entries) {
      try {
        list = listZip(bytes, options.max_zip_entries, format);
      } catch (error) {
        if (error instanceof ExtractionFailedError) throw error;
        throw this.corrupt(`the ${format.toUpperCase()} archive is damaged`, error);
      }
    }
    // Part names are case-insensitive (ECMA-376 part 2).
    this.entries = new Map(list.map((e) => [e.name.toLowerCase(), e]));
  }

  corrupt(message: string, cause?: unknown): ExtractionFailedError {
    return new ExtractionFailedError(this.format, "corrupt", message, cause);
  }

  has(path: string): boolean {
    return this.entries.has(path.toLowerCase());
  }

  /** A part's text, or null if the package has no such part. */
  async text(path: string): Promise<string | null> {
    const entry = this.entries.get(path.replace(/^\//, "").toLowerCase());
    if (entry === undefined) return null;
    return decodeXmlBytes(await readZipEntry(this.bytes, entry, this.budget));
  }

  /** Run a parser over a part, turning malformed XML into a corrupt-file error. */
  parse<T>(path: string, run: () => T): T {
    try {
      return run();
    } catch (error) {
      if (error instanceof ExtractionFailedError) throw error;
      if (error instanceof XmlError || error instanceof ZipFormatError)
        throw this.corrupt(`${path} is not well-formed XML`, error);
      throw error;
    }
  }

  /** Relationships of a part: id → { type, absolute target path }. */
  async relationships(partPath: string): Promise<Map<string, { type: string; target: string }>> {
    const slash = partPath.lastIndexOf("/");
    const dir = slash === -1 ? "" : partPath.slice(0, slash);
    const relsPath = `${dir === "" ? "" : `${dir}/`}_rels/${partPath.slice(slash + 1)}.rels`;
    const xml = await this.text(relsPath);
    const rels = new Map<string, { type: string; target: string }>();
    if (xml === null) return rels;
    this.parse(relsPath, () =>
      scanXml(xml, {
        open(name, attrs) {
          if (name !== "Relationship") return;
          const id = attr(attrs, "Id");
          const target = attr(attrs, "Target");
          if (id === undefined || target === undefined || attr(attrs, "TargetMode") === "External")
            return;
          rels.set(id, { type: attr(attrs, "Type") ?? "", target: resolvePartPath(dir, target) });
        },
      }),
    );
    return rels;
  }
}

/** Resolve a relationship target against the folder of its source part ("/xl/x.xml", "../a.xml", "b.xml"). */
export function resolvePartPath(dir: string, target: string): string {
  const segments = target.startsWith("/") ? [] : dir.split("/").filter(Boolean);
  for (const seg of target.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") segments.pop();
    else segments.push(seg);
  }
  return segments.join("/");
}

/** The package's main part, from the root relationships (`officeDocument`). */
export async function officeDocumentPath(pkg: OoxmlPackage): Promise<string | undefined> {
  const rels = await pkg.relationships("");
  for (const rel of rels.values())
    if (rel.type.endsWith("/officeDocument") && pkg.has(rel.target)) return rel.target;
  return undefined;
}
