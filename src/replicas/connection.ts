/**
 * The connection to a Redis or Valkey server, through the `ioredis` client:
 * the only file that knows the client library. It reconnects by itself; a
 * command sent while it is disconnected fails at once instead of queueing,
 * so that a down store costs a request nothing.
 *
 * @module
 */
import type { Redis as RedisClient } from "ioredis";

/** What the shared store asks of a connection; a test passes a fake. */
export interface StoreConnection {
  /** The values of `keys`, `null` for each key with none. */
  mget(keys: readonly string[]): Promise<(string | null)[]>;
  /** Sets `key` to `value`, to expire after `ttlMs`. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Tells `listener` when the connection is ready, and each time it is again. */
  onReady(listener: () => void): void;
  /** Tells `listener` each error of the connection, by the error itself. */
  onError(listener: (error: unknown) => void): void;
  /** Closes the connection and stops reconnecting. */
  close(): Promise<void>;
}

/** The longest wait for a closing connection to end, in milliseconds. */
const CLOSE_WAIT_MS = 1000;

/** The longest wait between two reconnection attempts, in milliseconds. */
const MAX_RECONNECT_MS = 1000;

/** Options for {@linkcode redisConnection}. */
export interface RedisConnectionOptions {
  /**
   * The certificate authorities (PEM) a `rediss://` store's certificate is
   * checked against, instead of the runtime's own.
   */
  readonly ca?: string;
}

/**
 * Opens a connection to `url` (`redis://HOST:PORT/DB`, `rediss://` for TLS).
 * It connects in the background; until it is ready, commands fail.
 *
 * @param url The store's URL; it may hold a password, so it is never logged.
 * @param options The authorities to trust for TLS.
 * @returns The connection.
 */
export async function redisConnection(
  url: string,
  options: RedisConnectionOptions = {},
): Promise<StoreConnection> {
  // Loaded only when a store is configured: a proxy alone never loads it.
  const { Redis } = await import("ioredis");
  const client: RedisClient = new Redis(url, {
    // Fail at once when disconnected: the caller's deadline is short.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: 2000,
    retryStrategy: (times: number) => Math.min(times * 100, MAX_RECONNECT_MS),
    connectionName: "incontext",
    // rediss:// turns TLS on; a CA of the operator's is checked against.
    ...(options.ca !== undefined && url.startsWith("rediss:")
      ? { tls: { ca: options.ca } }
      : {}),
  });
  // Without a listener ioredis prints every error itself; the store logs once per outage.
  let onError: (error: unknown) => void = () => {};
  client.on("error", (error: unknown) => onError(error));
  return {
    mget: (keys) => client.mget([...keys]),
    set: async (key, value, ttlMs) => {
      await client.set(key, value, "PX", ttlMs);
    },
    onReady: (listener) => {
      client.on("ready", listener);
      if (client.status === "ready") listener();
    },
    onError: (listener) => {
      onError = listener;
    },
    close: async () => {
      client.disconnect(false);
      // A client that was between two reconnection attempts may never say
      // "end": the wait is bounded, so a shutdown during an outage finishes.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        if (client.status === "end") return resolve();
        client.once("end", () => resolve());
        timer = setTimeout(resolve, CLOSE_WAIT_MS);
      });
      clearTimeout(timer);
    },
  };
}
