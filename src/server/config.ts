/**
 * The server's settings: where it listens, the bounds of what a client may
 * send and keep open, and how long requests in flight may finish when it
 * stops.
 *
 * @module
 */
import {
  broken,
  integer,
  ok,
  refine,
  seconds,
} from "../_internal/setting_parsers.ts";
import type { Parse, SettingsOf } from "../_internal/setting.ts";

// HOST:PORT with a port in 1-65535 (0 would pick a random port nobody can find).
const listenAddress: Parse<string> = (value) => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : 0;
  return port >= 1 && port <= 65535
    ? ok(value)
    : broken("must be HOST:PORT with a port from 1 to 65535");
};

/** The server's part of the configuration. */
export type ServerConfig = {
  readonly listen: string;
  readonly maxRequestBytes: number;
  readonly maxHeaderBytes: number;
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly keepAliveTimeoutSeconds: number;
  readonly maxConnections: number;
  readonly shutdownGraceSeconds: number;
};

/** The server's settings, by the property each one sets. */
export const SERVER_SETTINGS: SettingsOf<ServerConfig> = {
  listen: {
    variable: "INCONTEXT_LISTEN",
    flag: "--listen HOST:PORT",
    default: "127.0.0.1:8787",
    doc: "where it listens, `HOST:PORT` (`[::1]:PORT` for IPv6)",
    parse: listenAddress,
  },
  maxRequestBytes: {
    variable: "INCONTEXT_MAX_REQUEST_BYTES",
    default: 32 * 1024 * 1024,
    doc: "request bodies above this size get a 413",
    parse: integer(1),
  },
  maxHeaderBytes: {
    variable: "INCONTEXT_MAX_HEADER_BYTES",
    default: 64 * 1024,
    doc: "larger request heads (request line and header fields) get a 431",
    parse: refine(
      integer(1),
      (n) => n >= 1024,
      "must be at least 1024: a request line and a host alone can take that",
    ),
  },
  headersTimeoutSeconds: {
    variable: "INCONTEXT_HEADERS_TIMEOUT_SECONDS",
    default: 30,
    doc:
      "how long a client may take to send a request head, then the connection closes",
    parse: seconds,
  },
  requestTimeoutSeconds: {
    variable: "INCONTEXT_REQUEST_TIMEOUT_SECONDS",
    default: 300,
    doc: "how long a client may take to send a whole request (head and body)",
    parse: seconds,
  },
  keepAliveTimeoutSeconds: {
    variable: "INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS",
    default: 75,
    doc: "how long an idle keep-alive connection stays open",
    parse: seconds,
  },
  maxConnections: {
    variable: "INCONTEXT_MAX_CONNECTIONS",
    default: 512,
    doc:
      "client connections open at once, beyond it closed; keep below `ulimit -n`",
    parse: integer(1),
  },
  shutdownGraceSeconds: {
    variable: "INCONTEXT_SHUTDOWN_GRACE_SECONDS",
    default: 30,
    doc:
      "how long requests in flight may finish after SIGTERM, SIGINT or SIGHUP",
    parse: seconds,
  },
};
