/**
 * The proxy's own endpoints under `/incontext/`, apart from the request path.
 *
 * @module
 */
import { errorResponse } from "../bridges/answers.ts";
import { VERSION } from "../core/version.ts";
import { counter, gauge } from "../_internal/metrics.ts";
import { processMetrics } from "./process_metrics.ts";
import type { DecisionRecord, ProxyContext } from "./state.ts";
import type { ProxyRequestInfo } from "./options.ts";
import { livez, readyz } from "./health.ts";
import { statusPage } from "./status_page.ts";
import type { ModelVerification } from "./verification.ts";

/** Each endpoint by path, with its name in the metrics. */
const ENDPOINTS: Record<
  string,
  readonly [
    name: string,
    answer: (
      context: ProxyContext,
      asked: Asked,
    ) => Response | Promise<Response>,
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
    (context, asked) =>
      Response.json(
        contextView(context, { modelNames: showsModelNames(asked, context) }),
      ),
  ],
};

/** A request to one of the proxy's own endpoints. */
export interface Asked {
  readonly request: Request;
  readonly url: URL;
  /** What the server knows of the client. */
  readonly info: ProxyRequestInfo | undefined;
}

/**
 * Whether the model names clients chose are shown: they may tell what a
 * deployment serves and to whom. With an admin token set, whoever got past
 * it sees them; without one, only a loopback client (an operator on the
 * host, or a reverse proxy there, which should then set the token).
 */
function showsModelNames(asked: Asked, context: ProxyContext): boolean {
  if (context.options.adminToken !== undefined) return true;
  const hostname = asked.info?.remoteAddr?.hostname;
  return hostname !== undefined && isLoopback(hostname);
}

/** 127.0.0.0/8 and ::1, also written as IPv4-mapped IPv6 addresses. */
function isLoopback(hostname: string): boolean {
  const address = hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return address === "::1" || /^(?:::ffff:)?127\.\d+\.\d+\.\d+$/.test(address);
}

/**
 * Answers `/incontext/` (the status page), `livez`, `readyz`, `healthz`,
 * `metrics` and `context`.
 */
export async function ownEndpoint(
  asked: Asked,
  context: ProxyContext,
): Promise<Response> {
  const { request, url } = asked;
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
  const [name, answer] = endpoint;
  const { options } = context;
  // The decisions (with the model names clients chose) are on the context
  // endpoint and the page that draws them: both can be closed.
  if (
    options.contextEndpoint === false &&
    (name === "context" || name === "status")
  ) {
    return errorResponse(404, {
      code: "not_found",
      message: "No such incontext endpoint",
    });
  }
  if (GUARDED.has(name)) {
    const refusal = refused(request, options.adminToken, name);
    if (refusal !== undefined) return refusal;
  }
  return await answer(context, asked);
}

/** What `INCONTEXT_ADMIN_TOKEN` guards; health stays open for probes. */
const GUARDED: ReadonlySet<string> = new Set(["metrics", "context", "status"]);

async function metricsResponse(
  context: ProxyContext,
  asked: Asked,
): Promise<Response> {
  const names = showsModelNames(asked, context);
  return new Response(await metrics(context, names), {
    headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
  });
}

/**
 * A 401 unless the request bears `token` (or no token is set): as a bearer
 * token, or as the password of HTTP Basic credentials (any user name), which
 * a browser asks for and then sends by itself, so that the status page and
 * its own reads of `/incontext/context` open in a browser. The comparison
 * takes the same time wherever the first difference lies, so the token
 * cannot be guessed byte by byte.
 */
function refused(
  request: Request,
  token: string | undefined,
  name: string,
): Response | undefined {
  if (token === undefined) return undefined;
  const a = encoder.encode(presented(request.headers.get("authorization")));
  const b = encoder.encode(token);
  let difference = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) difference |= (a[i] ?? 0) ^ b[i]!;
  if (difference === 0) return undefined;
  const response = errorResponse(401, {
    code: "unauthorized",
    message:
      "This incontext endpoint needs the admin token: as a bearer token, or as the password of Basic credentials",
  });
  // A browser prompts for the first scheme it knows: the page asks for Basic.
  response.headers.set(
    "www-authenticate",
    name === "status"
      ? 'Basic realm="incontext", charset="UTF-8"'
      : 'Bearer realm="incontext", Basic realm="incontext", charset="UTF-8"',
  );
  return response;
}

/** The token an `Authorization` header presents: a bearer token, or a Basic password. */
function presented(authorization: string | null): string {
  const header = authorization ?? "";
  const bearer = /^Bearer +(.+)$/i.exec(header)?.[1];
  if (bearer !== undefined) return bearer.trim();
  const basic = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header)?.[1];
  if (basic === undefined) return "";
  let decoded: string;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(atob(basic), (c) => c.charCodeAt(0)),
    );
  } catch {
    return "";
  }
  const colon = decoded.indexOf(":");
  return colon < 0 ? "" : decoded.slice(colon + 1);
}

const encoder = new TextEncoder();

/** The metrics text; `names` shows the model names clients chose. */
async function metrics(
  context: ProxyContext,
  names: boolean,
): Promise<string> {
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
    ...state.upstreamErrors.render(),
    ...state.disconnects.render(),
    ...state.timeouts.render(),
    ...state.disagreements.render(),
    ...state.verification.metricLines(names),
    ...gauge(
      "incontext_anchor_entries",
      "Conversations with a usage anchor.",
      state.anchors.size,
    ),
  ];
  for (const reporter of options.reporters ?? []) {
    lines.push(...reporter.metricLines());
  }
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

/** The shape of `GET /incontext/context`, documented in docs/operating.md. */
export function contextView(
  context: ProxyContext,
  { modelNames }: { readonly modelNames: boolean },
): {
  window: number;
  contextLength: number;
  minOutputTokens: number;
  fallbackMarginTokens: number;
  onExhausted: string;
  modelNames: "shown" | "hidden";
  anchors: { entries: number; tolerance: number; disagreements: number };
  verification: {
    checked: number;
    equal: number;
    models: ModelVerification[];
  };
  decisions: DecisionRecord[];
} {
  const { options, settings, state } = context;
  const decisions = state.recent();
  // One numbering for the decisions and the tallies: the page pairs them.
  const labels = new Map<string, string>();
  const shown = modelNames ? decisions : withoutModelNames(decisions, labels);
  const models = state.verification.view((model) =>
    modelNames ? model : hiddenName(labels, model)
  );
  return {
    window: options.live?.().window ?? options.window,
    contextLength: options.contextLength,
    minOutputTokens: options.minOutputTokens ?? 4096,
    fallbackMarginTokens: options.fallbackMarginTokens ?? 1024,
    onExhausted: options.onExhausted ?? "clamp",
    modelNames: modelNames ? "shown" : "hidden",
    anchors: {
      entries: state.anchors.size,
      tolerance: settings.anchorTolerance,
      disagreements: state.disagreements.value(),
    },
    verification: { ...state.verification.totals(), models },
    decisions: shown,
  };
}

/**
 * The decisions with each model name replaced by `model N`, numbered in
 * order of first appearance: the page still charts each model apart.
 */
function withoutModelNames(
  decisions: DecisionRecord[],
  labels: Map<string, string>,
): DecisionRecord[] {
  return decisions.map((decision) =>
    decision.model === null
      ? decision
      : { ...decision, model: hiddenName(labels, decision.model) }
  );
}

/** The `model N` label of `model`, numbered on first sight. */
function hiddenName(labels: Map<string, string>, model: string): string {
  let label = labels.get(model);
  if (label === undefined) {
    label = `model ${labels.size + 1}`;
    labels.set(model, label);
  }
  return label;
}
