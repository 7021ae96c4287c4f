/** The options of the proxy handler, and its type. */
import type { BridgeOptions } from "../bridges/options.ts";
import type { CountCache } from "../cache/mod.ts";
import type { AnchorStore } from "../anchors/store.ts";
import type { Readiness } from "./readiness.ts";

/** Options for {@linkcode createProxyHandler}. */
export interface ProxyOptions extends BridgeOptions {
  /** The upstream server's root URL, e.g. `http://127.0.0.1:8000`; request paths are appended. */
  readonly upstream: string;
  /**
   * Request bodies above this many bytes get a 413 before they are read whole.
   *
   * @default 33554432 (32 MiB)
   */
  readonly maxRequestBytes?: number;
  /**
   * How many conversations' usage anchors are kept (ignored when `anchors`
   * is given: that store has its own bound).
   *
   * @default 4096
   */
  readonly anchorEntries?: number;
  /**
   * The store the proxy records each response's usage into and reads usage
   * anchors from: pass the store of an `AnchoredBackend` so that the backend
   * counts from the usage the proxy sees.
   *
   * @default a new store of `anchorEntries` anchors
   */
  readonly anchors?: AnchorStore;
  /**
   * An exact count differing from the usage anchor by more than this fraction
   * is logged and counted in the metrics.
   *
   * @default 0.02
   */
  readonly anchorTolerance?: number;
  /**
   * How many recent decisions `GET /incontext/context` shows.
   *
   * @default 50
   */
  readonly recentDecisions?: number;
  /**
   * The fetch used to reach the upstream.
   *
   * @default globalThis.fetch
   */
  readonly fetch?: typeof globalThis.fetch;
  /** The count cache whose hits and misses the metrics report. */
  readonly cache?: CountCache;
  /**
   * How long the upstream may take to send its response headers, in seconds;
   * then the proxy answers 504 `upstream_timeout`. A server sends the headers
   * of a non-streamed generation only once it is complete, so leave room for
   * the longest generation.
   *
   * @default 600
   */
  readonly upstreamTimeoutSeconds?: number;
  /**
   * How long a response body may wait for the upstream's next bytes, in
   * seconds; then the proxy ends the client's stream with an error. Time the
   * client takes to read does not count.
   *
   * @default 600
   */
  readonly upstreamIdleTimeoutSeconds?: number;
  /**
   * Where `/incontext/readyz` keeps its last probe: pass one to record a
   * probe made elsewhere (a server's start-up probe), which then answers
   * readiness until it is stale.
   *
   * @default a new Readiness with its defaults
   */
  readonly readiness?: Readiness;
  /**
   * Aborting it ends every upstream request and response in flight, and the
   * proxy answers 503 from then on: a server's shutdown grace period is over.
   */
  readonly signal?: AbortSignal;
}

/** The proxy: a named Web handler. */
export type ProxyHandler = (request: Request) => Promise<Response>;
