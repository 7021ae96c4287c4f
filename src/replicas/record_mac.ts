/**
 * Records authenticated by a secret the replicas share: a stored text is
 * `MAC.VALUE`, where MAC is the base64url HMAC-SHA256 of the record's key
 * and value. Anyone who can write to the store but lacks the secret cannot
 * forge a record, nor move a genuine one to another key (the key is under
 * the MAC), so no write to the store can make a replica refuse or shrink a
 * request. A replica without the secret reads a signed text as a record of
 * another shape, and one with it reads an unsigned text as forged: either
 * way the record is ignored.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto";

const encoder = new TextEncoder();

/** The length of a MAC in base64url: 32 bytes. */
const MAC_LENGTH = 43;

function mac(secret: string, key: string, value: string): string {
  // A NUL cannot occur in a key: it separates key and value unambiguously.
  return createHmac("sha256", secret).update(`${key}\0${value}`).digest(
    "base64url",
  );
}

/**
 * The text to store for `value` under `key`.
 *
 * @param secret The replicas' shared secret.
 * @param key The record's key.
 * @param value The record's text.
 * @returns `MAC.VALUE`.
 */
export function signRecord(secret: string, key: string, value: string): string {
  return `${mac(secret, key, value)}.${value}`;
}

/**
 * The value of a stored text whose MAC holds for `key`.
 *
 * @param secret The replicas' shared secret.
 * @param key The key the text was read from.
 * @param text The stored text.
 * @returns The value, or undefined when the text is not signed with the
 * secret for this key.
 */
export function verifiedRecord(
  secret: string,
  key: string,
  text: string,
): string | undefined {
  if (text.length <= MAC_LENGTH || text[MAC_LENGTH] !== ".") return undefined;
  const value = text.slice(MAC_LENGTH + 1);
  const expected = encoder.encode(mac(secret, key, value));
  const given = encoder.encode(text.slice(0, MAC_LENGTH));
  return given.length === expected.length && timingSafeEqual(given, expected)
    ? value
    : undefined;
}
