/**
 * The count cache's key ({@linkcode hashCountKey}), with the latest payloads'
 * keys remembered.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { RecentMap } from "../_internal/recent_map.ts";

/**
 * A payload longer than this many characters is not remembered: beyond,
 * hashing is a smaller share of a count, and holding the text costs more.
 */
const MEMO_MAX_CHARS = 32_768;
/** How many payloads are remembered: at most 1 Mi characters in all. */
const MEMO_ENTRIES = 32;

interface Memo {
  readonly source: string;
  readonly contextLength: number;
  readonly key: string;
}

/**
 * The keys of the payloads hashed last, by the exact payload text, least
 * recently used first. A count-cache hit is a payload counted before (a
 * retried or repeated request), and its SHA-256 (a hash object, the text
 * converted to UTF-8) costs the proxy far more than finding the same text
 * in a `Map`: V8 hashes the text once and compares it whole on a match, so
 * a found key is exact.
 */
const recent = new RecentMap<string, Memo>();

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
  const memorable = payload.length <= MEMO_MAX_CHARS;
  const memo = memorable ? recent.use(payload) : undefined;
  if (
    memo !== undefined && memo.source === source &&
    memo.contextLength === contextLength
  ) {
    return memo.key;
  }
  const key = sha256Key(source, contextLength, payload);
  if (memorable) {
    recent.put(payload, { source, contextLength, key });
    if (recent.size > MEMO_ENTRIES) recent.delete(recent.oldest()!);
  }
  return key;
}

/** What the memo holds, for tests: payloads and their characters. */
export function countKeyMemoSize(): { entries: number; chars: number } {
  let chars = 0;
  for (const payload of recent.keys()) chars += payload.length;
  return { entries: recent.size, chars };
}

function sha256Key(
  source: string,
  contextLength: number,
  payload: string,
): string {
  // The JSON array frames source and length unambiguously; the payload follows the newline.
  // node:crypto (in Deno and Node alike) hashes a string synchronously, with
  // no copy into a buffer and no promise as crypto.subtle needs; two updates
  // hash the same bytes as one joined string, unjoined.
  return createHash("sha256")
    .update(`${JSON.stringify([source, contextLength])}\n`)
    .update(payload)
    .digest("hex");
}
