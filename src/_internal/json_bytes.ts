/**
 * The text of a JSON body as Python's `json.loads` reads bytes (vLLM's
 * FastAPI routes parse request bodies with it): UTF-8, with or without a
 * byte order mark, or UTF-16 and UTF-32, told apart by a BOM or by where the
 * first bytes are zero (CPython's `json.detect_encoding`), decoded with the
 * `surrogatepass` error handler, so that a surrogate code point spelled
 * alone in the bytes (`ED A0 80` in UTF-8) is read too.
 *
 * @module
 */
import { isUtf8 } from "node:buffer";

/** The encodings `json.detect_encoding` tells apart. */
export type JsonEncoding =
  | "utf-8"
  | "utf-8-sig"
  | "utf-16le"
  | "utf-16be"
  | "utf-32le"
  | "utf-32be";

/** A body's text, as {@linkcode jsonText} decodes it. */
export interface JsonText {
  /** The text, without its byte order mark. */
  readonly text: string;
  /**
   * Whether the bytes spell a surrogate code point alone. Python keeps two
   * such halves as two code points; a JavaScript string joins a high and a
   * low one into one character, so the text cannot be written again as the
   * bytes read.
   */
  readonly loneSurrogates: boolean;
}

/**
 * The encoding Python's `json.loads` reads `bytes` in.
 *
 * @param bytes A request body.
 * @returns The encoding, UTF-8 by default.
 */
export function jsonEncoding(bytes: Uint8Array): JsonEncoding {
  const [a, b, c, d] = bytes;
  if (a === 0x00 && b === 0x00 && c === 0xfe && d === 0xff) return "utf-32be";
  if (a === 0xff && b === 0xfe && c === 0x00 && d === 0x00) return "utf-32le";
  if (a === 0xfe && b === 0xff) return "utf-16be";
  if (a === 0xff && b === 0xfe) return "utf-16le";
  if (a === 0xef && b === 0xbb && c === 0xbf) return "utf-8-sig";
  if (bytes.length >= 4) {
    if (a === 0) return b ? "utf-16be" : "utf-32be";
    if (b === 0) return c || d ? "utf-16le" : "utf-32le";
  } else if (bytes.length === 2) {
    if (a === 0) return "utf-16be";
    if (b === 0) return "utf-16le";
  }
  return "utf-8";
}

// Checking and then decoding leniently is several times faster than a
// fatal decoder (Deno and Node alike); both read valid UTF-8 the same.
const lenient = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Decodes a JSON body as Python's `json.loads` does, BOM removed. Valid
 * UTF-8 takes one check and one decoding; only bytes that fail the check
 * are searched for surrogates.
 *
 * @param bytes A request body.
 * @returns The text, or undefined when Python cannot decode it either.
 */
export function jsonText(bytes: Uint8Array): JsonText | undefined {
  const encoding = jsonEncoding(bytes);
  if (encoding === "utf-8" || encoding === "utf-8-sig") {
    const body = encoding === "utf-8" ? bytes : bytes.subarray(3);
    return isUtf8(body)
      ? { text: lenient.decode(body), loneSurrogates: false }
      : utf8WithSurrogates(body);
  }
  if (encoding === "utf-16le" || encoding === "utf-16be") {
    try {
      const text = new TextDecoder(encoding, { fatal: true }).decode(bytes);
      return { text, loneSurrogates: false };
    } catch {
      return utf16WithSurrogates(bytes, encoding === "utf-16le");
    }
  }
  return utf32(bytes, encoding === "utf-32le");
}

/**
 * UTF-8 in which `ED A0..BF 80..BF` spells a surrogate (Python's
 * `surrogatepass`); any other invalid byte fails. `ED` never continues a
 * character, so the runs between surrogates are UTF-8 on their own.
 */
function utf8WithSurrogates(bytes: Uint8Array): JsonText | undefined {
  let text = "";
  let start = 0;
  let passed = false;
  for (let at = bytes.indexOf(0xed); at !== -1; at = bytes.indexOf(0xed, at)) {
    const second = bytes[at + 1] ?? 0;
    const third = bytes[at + 2] ?? 0;
    if ((second & 0xe0) !== 0xa0 || (third & 0xc0) !== 0x80) {
      at++;
      continue;
    }
    const run = bytes.subarray(start, at);
    if (!isUtf8(run)) return undefined;
    text += lenient.decode(run) +
      String.fromCharCode(0xd000 | ((second & 0x3f) << 6) | (third & 0x3f));
    passed = true;
    start = at += 3;
  }
  const rest = bytes.subarray(start);
  if (!passed || !isUtf8(rest)) return undefined;
  return { text: text + lenient.decode(rest), loneSurrogates: true };
}

/** UTF-16 whose lone surrogates pass (a fatal decoder refused it); a leading BOM dropped. */
function utf16WithSurrogates(
  bytes: Uint8Array,
  little: boolean,
): JsonText | undefined {
  if (bytes.length % 2 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const units: number[] = [];
  for (let at = 0; at < bytes.length; at += 2) {
    const unit = view.getUint16(at, little);
    if (at > 0 || unit !== 0xfeff) units.push(unit);
  }
  return { text: fromUnits(units, String.fromCharCode), loneSurrogates: true };
}

/** UTF-32 (no `TextDecoder` reads it), surrogates passed, a leading BOM dropped. */
function utf32(bytes: Uint8Array, little: boolean): JsonText | undefined {
  if (bytes.length % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const points: number[] = [];
  let loneSurrogates = false;
  for (let at = 0; at < bytes.length; at += 4) {
    const point = view.getUint32(at, little);
    if (point > 0x10ffff) return undefined;
    if (point >= 0xd800 && point <= 0xdfff) loneSurrogates = true;
    if (at > 0 || point !== 0xfeff) points.push(point);
  }
  return { text: fromUnits(points, String.fromCodePoint), loneSurrogates };
}

/** Joins code units or points, a slice at a time (an argument list is bounded). */
function fromUnits(
  units: readonly number[],
  from: (...units: number[]) => string,
): string {
  let text = "";
  for (let at = 0; at < units.length; at += 4096) {
    text += from(...units.slice(at, at + 4096));
  }
  return text;
}
