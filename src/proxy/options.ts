/**
 * The proxy's options, its handler's type, and the checks its options pass
 * once, when it is made.
 *
 * @module
 */
import type { BridgeOptions } from "../bridges/options.ts";
import type { CountCache } from "../cache/mod.ts";
import { AnchorStore } from "../anchors/store.ts";
import { Readiness } from "./readiness.ts";
import type { BudgetRoute } from "../core/route.ts";
import { validateBudgetOptions } from "../core/budget_settings.ts";
import { requireInteger } from "../core/compute.ts";
import { checkHttpUrl } from "../_internal/url.ts";
import { MAX_TIMEOUT_SECONDS } from "../_internal/timer_limit.ts";

/** The window and routes in force, for {@linkcode ProxyOptions.live}. */
export interface LiveBudget {
  /** The compression window W of requests whose route names none. */
  readonly window: number;
  /** The routes budgeted, each with its own window; others pass untouched. */
  readonly routes?: readonly BudgetRoute[];
}

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
  /** Parts of the server whose health and metrics the proxy's endpoints report. */
  readonly reporters?: readonly ProxyReporter[];
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
   * When set, `/incontext/metrics`, `/incontext/context` and the status
   * page answer 401 unless the request bears it: as a bearer token
   * (`Authorization: Bearer <token>`), or as the password of HTTP Basic
   * credentials, which a browser prompts for. `/incontext/livez`, `readyz`
   * and `healthz` stay open for health checks.
   */
  readonly adminToken?: string;
  /**
   * Whether `/incontext/context` is served: it shows recent decisions and,
   * to a client that presents `adminToken` (or, with no token set, to a
   * loopback client), the model names clients chose; anyone else sees
   * `model 1`, `model 2`... in their place. `false` answers 404.
   *
   * @default true
   */
  readonly contextEndpoint?: boolean;
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
  /**
   * Asked before each budget for the window and routes in force now, for a
   * window that follows a file that can change (a Hermes `config.yaml`). It
   * must answer at once, from what it already knows.
   *
   * @default the options' own `window`, `route` and `routes`
   */
  readonly live?: () => LiveBudget;
}

/**
 * A part of the server that the proxy's own endpoints report on, such as a
 * store shared by replicas: its detail in `/incontext/healthz` (which never
 * changes the status: the proxy works without it) and its metric families.
 */
export interface ProxyReporter {
  /** Its entry's name in `/incontext/healthz`, such as `sharedStore`. */
  readonly name: string;
  /** Its health detail, as JSON. */
  status(): unknown;
  /**
   * Checks the part again before its status is read, when its status may
   * lag (a store seen down answers only once something asks it): run by
   * `/incontext/readyz`, it must settle within a couple of seconds.
   */
  refresh?(): Promise<void>;
  /** Its metric families, in the Prometheus text format, line by line. */
  metricLines(): string[];
}

/**
 * What the server knows of a request beyond the request itself: the shape
 * of `Deno.serve`'s handler info, so that `Deno.serve(proxy)` passes it.
 */
export interface ProxyRequestInfo {
  /** The client's address, as the connection has it. */
  readonly remoteAddr?: { readonly hostname: string };
}

/**
 * The proxy: a named Web handler. `info` tells it the client's address;
 * without it the client counts as remote.
 */
export type ProxyHandler = (
  request: Request,
  info?: ProxyRequestInfo,
) => Promise<Response>;

/** The proxy's validated bounds. */
export interface ProxySettings {
  readonly upstream: URL;
  readonly maxRequestBytes: number;
  readonly anchorEntries: number;
  readonly anchorTolerance: number;
  readonly recentDecisions: number;
  /** How long the upstream may take to send its headers. */
  readonly upstreamTimeoutMs: number;
  /** How long a response body may wait for the upstream's next bytes. */
  readonly upstreamIdleTimeoutMs: number;
}

/**
 * Checks the options once and reads them into the proxy's bounds, with
 * their defaults.
 *
 * @throws {RangeError} When a budget option or bound is invalid.
 * @throws {TypeError} When `upstream` is not an http(s) URL, or `anchors`,
 * `adminToken` or `readiness` is of the wrong kind.
 */
export function readSettings(options: ProxyOptions): ProxySettings {
  validateBudgetOptions(options);
  const rule = typeof options.upstream === "string"
    ? checkHttpUrl(options.upstream)
    : "must be a string";
  if (rule !== undefined) {
    throw new TypeError(`Cannot create the proxy as 'upstream' ${rule}`);
  }
  const {
    maxRequestBytes = 32 * 1024 * 1024,
    anchorEntries = 4096,
    anchorTolerance = 0.02,
    recentDecisions = 50,
    upstreamTimeoutSeconds = 600,
    upstreamIdleTimeoutSeconds = 600,
  } = options;
  const what = "create the proxy";
  requireInteger(maxRequestBytes, { what, name: "maxRequestBytes", min: 1 });
  requireInteger(anchorEntries, { what, name: "anchorEntries", min: 1 });
  requireInteger(recentDecisions, { what, name: "recentDecisions", min: 1 });
  if (
    options.anchors !== undefined && !(options.anchors instanceof AnchorStore)
  ) {
    throw new TypeError(
      "Cannot create the proxy as 'anchors' must be an AnchorStore",
    );
  }
  const { adminToken } = options;
  if (
    adminToken !== undefined &&
    (typeof adminToken !== "string" || adminToken.trim() === "")
  ) {
    throw new TypeError(
      "Cannot create the proxy as 'adminToken' must be a non-blank string",
    );
  }
  if (
    options.readiness !== undefined &&
    !(options.readiness instanceof Readiness)
  ) {
    throw new TypeError(
      "Cannot create the proxy as 'readiness' must be a Readiness",
    );
  }
  if (!(anchorTolerance >= 0 && anchorTolerance < 1)) {
    throw new RangeError(
      `Cannot create the proxy as 'anchorTolerance' must be a fraction in [0, 1): current value is ${anchorTolerance}`,
    );
  }
  return {
    upstream: new URL(options.upstream),
    maxRequestBytes,
    anchorEntries,
    anchorTolerance,
    recentDecisions,
    upstreamTimeoutMs: timeoutMs(
      "upstreamTimeoutSeconds",
      upstreamTimeoutSeconds,
    ),
    upstreamIdleTimeoutMs: timeoutMs(
      "upstreamIdleTimeoutSeconds",
      upstreamIdleTimeoutSeconds,
    ),
  };
}

function timeoutMs(name: string, seconds: number): number {
  if (!(seconds > 0 && seconds <= MAX_TIMEOUT_SECONDS)) {
    throw new RangeError(
      `Cannot create the proxy as '${name}' must be a number of seconds in (0, ${MAX_TIMEOUT_SECONDS}]: current value is ${seconds}`,
    );
  }
  return Math.ceil(seconds * 1000);
}
