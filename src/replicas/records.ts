/**
 * The records replicas share, and their keys. A record is a small versioned
 * JSON object holding numbers only: never prompt text, never a credential.
 * A record of another version or shape is ignored, never trusted: a replica
 * of an older or newer release, or anything else writing to the store,
 * cannot make this one misread a count.
 *
 * @module
 */

/** The version of the record format this release writes and reads. */
export const RECORD_VERSION = 1;

/** What the keys of this release start with; the version is part of it. */
const PREFIX = `incontext:v${RECORD_VERSION}`;

/** The key of a usage anchor: the conversation digest of the anchor store. */
export function anchorRecordKey(digest: string): string {
  return `${PREFIX}:anchor:${digest}`;
}

/** The key of a count-cache entry: the count cache's own key. */
export function countRecordKey(key: string): string {
  return `${PREFIX}:count:${key}`;
}

/** A usage anchor as shared: what one request cost, and how many messages it had. */
export interface AnchorRecord {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** How many messages the anchored conversation had. */
  readonly length: number;
}

/** The stored text of an anchor: `{"v":1,"p":…,"c":…,"n":…}`. */
export function encodeAnchor(record: AnchorRecord): string {
  return JSON.stringify({
    v: RECORD_VERSION,
    p: record.promptTokens,
    c: record.completionTokens,
    n: record.length,
  });
}

/**
 * The anchor a stored text holds for a conversation of `length` messages:
 * `undefined` for no record, `"invalid"` for one of another version or
 * shape, or whose length is not the one its key was asked for.
 */
export function decodeAnchor(
  text: string | null,
  length: number,
): AnchorRecord | undefined | "invalid" {
  if (text === null) return undefined;
  const fields = readRecord(text, ["p", "c", "n"]);
  if (fields === undefined || fields.n !== length) return "invalid";
  return { promptTokens: fields.p!, completionTokens: fields.c!, length };
}

/** The stored text of a count: `{"v":1,"t":…}`. */
export function encodeCount(count: number): string {
  return JSON.stringify({ v: RECORD_VERSION, t: count });
}

/** The count a stored text holds: `undefined` for none, `"invalid"` for another version or shape. */
export function decodeCount(
  text: string | null,
): number | undefined | "invalid" {
  if (text === null) return undefined;
  const fields = readRecord(text, ["t"]);
  return fields === undefined ? "invalid" : fields.t!;
}

/** The named fields of a record of this version, each a count; else undefined. */
function readRecord(
  text: string,
  names: readonly string[],
): Record<string, number> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return undefined;
  }
  const record = value as Record<string, unknown>;
  if (record.v !== RECORD_VERSION) return undefined;
  // Exactly the fields of this version: a record with more or fewer is of another.
  if (Object.keys(record).length !== names.length + 1) return undefined;
  const fields: Record<string, number> = {};
  for (const name of names) {
    const field = record[name];
    if (!Number.isSafeInteger(field) || (field as number) < 0) return undefined;
    fields[name] = field as number;
  }
  return fields;
}
