/**
 * What the proxy's HTTP server refused before the handler saw a request
 * (a malformed head, a head too large, a head or body too slow, an unknown
 * method), as a part the proxy's own endpoints report on: a client's
 * error, never the upstream's.
 *
 * @module
 */
import { Counter } from "../../_internal/metrics.ts";
import type { ProxyReporter } from "../../proxy/options.ts";

/** The server's refusals: what it calls on each, and its report. */
export interface ServerRefusals {
  /** Counts one answer the server wrote itself. */
  refused(status: number): void;
  /** Its entry in `/incontext/readyz` and its metric family. */
  readonly reporter: ProxyReporter;
}

/**
 * Counts the server's own answers by status.
 *
 * @returns The counter's entry points.
 */
export function serverRefusals(): ServerRefusals {
  const counter = new Counter(
    "incontext_server_refusals_total",
    "Requests the server answered itself before the proxy read them, by status: 400 malformed, 408 too slow, 431 head too large, 501 unknown method.",
  );
  const statuses = new Set<string>();
  return {
    refused(status) {
      statuses.add(String(status));
      counter.inc({ status: String(status) });
    },
    reporter: {
      name: "server",
      status: () => ({
        refused: Object.fromEntries(
          [...statuses].sort().map((status) => [
            status,
            counter.value({ status }),
          ]),
        ),
      }),
      metricLines: () => counter.render(),
    },
  };
}
