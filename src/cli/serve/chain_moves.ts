/**
 * The moves of a backend chain as a part the proxy's own endpoints report
 * on: each model moved from one backend to another, counted by the two
 * backends' labels, in `/incontext/readyz` and the metrics. The chain's log
 * names the first move between two backends and one a minute at most after
 * it; the metric holds every one.
 *
 * @module
 */
import { Counter } from "../../_internal/metrics.ts";
import type { Backend } from "../../core/backend.ts";
import { BackendChain } from "../../core/backend_chain.ts";
import type { ProxyReporter } from "../../proxy/options.ts";

const NAME = "incontext_backend_chain_moves_total";
const HELP =
  "Models moved from one backend of the chain to another, by the two backends' labels: on to the next after the server's usage contradicted a count, back to the first after INCONTEXT_BACKEND_FALLBACK_TURNS verified counts.";

/**
 * The chain's report, or `undefined` when the backend is no chain.
 *
 * @param backend The backend the proxy counts with, before any wrapping.
 * @returns Its entry in `/incontext/readyz` and its metric family.
 */
export function chainMoves(backend: Backend): ProxyReporter | undefined {
  if (!(backend instanceof BackendChain)) return undefined;
  return {
    name: "backendChain",
    status: () => ({ moves: backend.moves() }),
    metricLines: () => {
      const counter = new Counter(NAME, HELP);
      for (const { from, to, count } of backend.moves()) {
        counter.inc({ from, to }, count);
      }
      return counter.render();
    },
  };
}
