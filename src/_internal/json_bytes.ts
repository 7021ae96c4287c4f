/**
 * The text of a JSON body as Python's `json.loads` reads bytes (vLLM's
 * FastAPI routes parse request bodies with it): UTF-8, with or without a
 * byte order mark, or UTF-16 and UTF-32, told apart by a BOM or by where the
 * first bytes are zero (CPython's `json.detect_encoding`).
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
 * Decodes a JSON body as Python's `json.loads` does, BOM removed.
 *
 * @param bytes A request body.
 * @returns The text, or undefined when it is not valid in its encoding.
 */
export function jsonText(bytes: Uint8Array): string | undefined {
  const encoding = jsonEncoding(bytes);
  if (encoding === "utf-8" || encoding === "utf-8-sig") {
    const body = encoding === "utf-8" ? bytes : bytes.subarray(3);
    return isUtf8(body) ? lenient.decode(body) : undefined;
  }
  try {
    return encoding === "utf-16le" || encoding === "utf-16be"
      ? new TextDecoder(encoding, { fatal: true }).decode(bytes)
      : utf32(bytes, encoding === "utf-32le");
  } catch {
    return undefined;
  }
}

/** UTF-32 (no `TextDecoder` reads it), a leading BOM dropped. */
function utf32(bytes: Uint8Array, little: boolean): string | undefined {
  if (bytes.length % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const points: number[] = [];
  for (let at = 0; at < bytes.length; at += 4) {
    const point = view.getUint32(at, little);
    if (point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) {
      return undefined;
    }
    if (at > 0 || point !== 0xfeff) points.push(point);
  }
  let text = "";
  for (let at = 0; at < points.length; at += 4096) {
    text += String.fromCodePoint(...points.slice(at, at + 4096));
  }
  return text;
}
