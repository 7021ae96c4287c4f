/** The proxy's own endpoints under `/incontext/`. */
import { errorResponse } from "../bridges/answers.ts";
import { VERSION } from "../core/version.ts";
import { counter, gauge } from "./metrics.ts";
import { processMetrics } from "./process_metrics.ts";
import type { ProxyContext } from "./state.ts";
import { livez, readyz } from "./health.ts";
import { statusPage } from "./status_page.ts";

/** Each endpoint by path, with its name in the metrics. */
const ENDPOINTS: Record<
  string,
  readonly [
    name: string,
    answer: (context: ProxyContext) => Response | Promise<Response>,
  ]
> = {
  "/incontext/": ["status", statusPage],
  "/incontext/livez": ["livez", livez],
  "/incontext/readyz": ["readyz", readyz],
  // The older name, kept: a readiness check too, never a liveness one.
  "/incontext/healthz": ["healthz", readyz],
  "/incontext/metrics": ["metrics", metricsResponse],
  "/incontext/context": [
    "context",
    (context) => Response.json(contextView(context)),
  ],
};

/**
 * Answers `/incontext/` (the status page), `livez`, `readyz`, `healthz`,
 * `metrics` and `context`.
 */
export async function ownEndpoint(
  request: Request,
  url: URL,
  context: ProxyContext,
): Promise<Response> {
  const endpoint = Object.hasOwn(ENDPOINTS, url.pathname)
    ? ENDPOINTS[url.pathname]
    : undefined;
  context.state.endpoints.inc({ endpoint: endpoint?.[0] ?? "unknown" });
  if (endpoint === undefined) {
    return errorResponse(404, {
      code: "not_found",
      message: "No such incontext endpoint",
    });
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    return errorResponse(405, {
      code: "method_not_allowed",
      message: "Use GET",
    });
  }
  return await endpoint[1](context);
}

async function metricsResponse(context: ProxyContext): Promise<Response> {
  return new Response(await metrics(context), {
    headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
  });
}

async function metrics(context: ProxyContext): Promise<string> {
  const { state, options } = context;
  const lines = [
    ...gauge(
      "incontext_build_info",
      "The running incontext's version; the value is always 1.",
      1,
      { version: VERSION },
    ),
    ...state.requests.render(),
    ...state.endpoints.render(),
    ...state.counts.render(),
    ...state.tokenizer.render(),
    ...state.upstreamSeconds.render(),
    ...state.upstream.render(),
    ...state.timeouts.render(),
    ...state.disagreements.render(),
    ...gauge(
      "incontext_anchor_entries",
      "Conversations with a usage anchor.",
      state.anchors.size,
    ),
  ];
  if (options.cache) {
    try {
      const stats = await options.cache.stats();
      lines.push(
        ...counter(
          "incontext_cache_hits_total",
          "Count cache hits.",
          stats.hits,
        ),
        ...counter(
          "incontext_cache_misses_total",
          "Count cache misses.",
          stats.misses,
        ),
        ...gauge("incontext_cache_entries", "Counts cached.", stats.entries),
      );
    } catch {
      // A disposed cache has no numbers; the rest still renders.
    }
  }
  lines.push(...await processMetrics());
  return lines.join("\n") + "\n";
}

/** The shape of `GET /incontext/context`, documented in docs/proxy.md. */
export function contextView(context: ProxyContext): {
  window: number;
  contextLength: number;
  minOutputTokens: number;
  fallbackMarginTokens: number;
  onExhausted: string;
  anchors: { entries: number; tolerance: number; disagreements: number };
  decisions: ReturnType<ProxyContext["state"]["recent"]>;
} {
  const { options, settings, state } = context;
  return {
    window: options.window,
    contextLength: options.contextLength,
    minOutputTokens: options.minOutputTokens ?? 4096,
    fallbackMarginTokens: options.fallbackMarginTokens ?? 1024,
    onExhausted: options.onExhausted ?? "clamp",
    anchors: {
      entries: state.anchors.size,
      tolerance: settings.anchorTolerance,
      disagreements: state.disagreements.value(),
    },
    decisions: state.recent(),
  };
}
