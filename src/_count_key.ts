/** The count cache's key: {@linkcode hashCountKey}. */
import { createHash } from "node:crypto";

/**
 * SHA-256 (hex) of a count's source, context length and payload, computed
 * synchronously.
 *
 * @throws {TypeError} If `source` or `payload` is not a string.
 * @throws {RangeError} If `contextLength` is not a positive integer.
 */
export function hashCountKey(
  source: string,
  contextLength: number,
  payload: string,
): string {
  if (typeof source !== "string" || typeof payload !== "string") {
    throw new TypeError(
      "Cannot compute the count cache key as 'source' and 'payload' must be strings",
    );
  }
  if (!Number.isSafeInteger(contextLength) || contextLength < 1) {
    throw new RangeError(
      `Cannot compute the count cache key as 'contextLength' must be a positive integer: current value is ${contextLength}`,
    );
  }
  // The JSON array frames source and length unambiguously; the payload follows the newline.
  // node:crypto (in Deno and Node alike) hashes a string synchronously, about
  // 5x faster than crypto.subtle at 40 KB (25 us vs 130 us, both measured
  // here); two updates hash the same bytes as one joined string, unjoined.
  return createHash("sha256")
    .update(`${JSON.stringify([source, contextLength])}\n`)
    .update(payload)
    .digest("hex");
}
