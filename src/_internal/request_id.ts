/**
 * The id a request is known by in logs, headers and callbacks: the client's
 * own `x-request-id` when it can be carried safely, else a new UUID.
 *
 * @module
 */

/** The longest request id taken from a client. */
const MAX_ID_LENGTH = 128;
// Visible ASCII only: an id goes into log lines and a response header.
const ID = /^[\x21-\x7e]+$/;

/**
 * The request id: the client's `x-request-id` when it is a short run of
 * visible ASCII, else a new UUID.
 */
export function requestIdOf(header: string | null): string {
  return header !== null && header.length <= MAX_ID_LENGTH && ID.test(header)
    ? header
    : crypto.randomUUID();
}
