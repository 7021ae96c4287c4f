/**
 * How long a timer can wait: 2^31 - 1 ms. A longer timer (and a longer
 * `AbortSignal.timeout`) fires at once on Node, so every timeout setting is
 * bounded by it.
 *
 * @module
 */

/** The longest timer, in milliseconds. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** The longest timeout setting, in whole seconds. */
export const MAX_TIMEOUT_SECONDS: number = Math.floor(MAX_TIMEOUT_MS / 1000);
