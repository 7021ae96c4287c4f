/** The proxy's own endpoints under `/incontext/`. */
import { errorResponse } from "../bridges/answers.ts";
import { ContextLengthMismatchError } from "../core/errors.ts";
import { gauge } from "./metrics.ts";
import type { ProxyContext } from "./state.ts";
import { upstreamUrl } from "./forward.ts";

/** Answers `/incontext/healthz`, `/incontext/metrics` and `/incontext/context`. */
export async function ownEndpoint(
  request: Request,
  url: URL,
  context: ProxyContext,
): Promise<Response> {
  context.state.requests.inc({ route: "incontext", action: "served" });
  if (request.method !== "GET" && request.method !== "HEAD") {
    return errorResponse(405, {
      code: "method_not_allowed",
      message: "Use GET",
    });
  }
  const { options } = context;
  switch (url.pathname) {
    case "/incontext/healthz":
      return await healthz(context);
    case "/incontext/metrics":
      return refused(request, options.adminToken) ??
        new Response(await metrics(context), {
          headers: {
            "content-type": "text/plain; version=0.0.4; charset=utf-8",
          },
        });
    case "/incontext/context":
      if (options.contextEndpoint === false) break;
      return refused(request, options.adminToken) ??
        Response.json(contextView(context));
  }
  return errorResponse(404, {
    code: "not_found",
    message: "No such incontext endpoint",
  });
}

/**
 * A 401 unless the request bears `token` as its bearer token (or no token
 * is set). The comparison takes the same time wherever the first
 * difference lies, so the token cannot be guessed byte by byte.
 */
function refused(
  request: Request,
  token: string | undefined,
): Response | undefined {
  if (token === undefined) return undefined;
  const given =
    /^Bearer +(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1] ??
      "";
  const a = encoder.encode(given.trim());
  const b = encoder.encode(token);
  let difference = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) difference |= (a[i] ?? 0) ^ b[i]!;
  if (difference === 0) return undefined;
  const response = errorResponse(401, {
    code: "unauthorized",
    message: "This incontext endpoint needs the admin token as a bearer token",
  });
  response.headers.set("www-authenticate", 'Bearer realm="incontext"');
  return response;
}

const encoder = new TextEncoder();

const HEALTH_TIMEOUT_MS = 2000;

/** 200 when the upstream answers and the tokenizer counts; 503 otherwise. */
async function healthz(context: ProxyContext): Promise<Response> {
  const [upstream, tokenizer] = await Promise.all([
    upstreamReachable(context),
    tokenizerReachable(context),
  ]);
  const ok = upstream && tokenizer === "reachable";
  const detail: Record<string, unknown> = {};
  for (const reporter of context.options.reporters ?? []) {
    detail[reporter.name] = reporter.status();
  }
  return Response.json({
    status: ok ? "ok" : "degraded",
    upstream: upstream ? "reachable" : "unreachable",
    tokenizer,
    ...detail,
  }, { status: ok ? 200 : 503 });
}

async function upstreamReachable(context: ProxyContext): Promise<boolean> {
  const target = upstreamUrl(
    context.settings.upstream,
    new URL("http://proxy/v1/models"),
  );
  try {
    const response = await (context.options.fetch ?? fetch)(target, {
      signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
      // An answer is all it asks for: a redirect is one, never followed.
      redirect: "manual",
    });
    await response.body?.cancel();
    // Any HTTP answer (even 401 without a key) means the server is there.
    return response.status < 500;
  } catch {
    return false;
  }
}

/**
 * `"reachable"` when the tokenizer counted; `"context_length_mismatch"` when
 * it answered with another context length (it is there, but every count
 * fails); `"unreachable"` otherwise.
 */
async function tokenizerReachable(
  context: ProxyContext,
): Promise<"reachable" | "unreachable" | "context_length_mismatch"> {
  try {
    // A new text each time: a count the cache answered would not reach the
    // tokenizer, and the check would report a dead one as reachable.
    const content = `incontext health check ${crypto.randomUUID()}`;
    await context.backend.count(
      { messages: [{ role: "user", content }] },
      {
        contextLength: context.options.contextLength,
        signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
      },
    );
    return "reachable";
  } catch (error) {
    return error instanceof ContextLengthMismatchError
      ? "context_length_mismatch"
      : "unreachable";
  }
}

async function metrics(context: ProxyContext): Promise<string> {
  const { state, options } = context;
  const lines = [
    ...state.requests.render(),
    ...state.counts.render(),
    ...state.tokenizer.render(),
    ...state.upstream.render(),
    ...state.upstreamErrors.render(),
    ...state.disconnects.render(),
    ...state.timeouts.render(),
    ...state.disagreements.render(),
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
        ...gauge("incontext_cache_hits", "Count cache hits.", stats.hits),
        ...gauge("incontext_cache_misses", "Count cache misses.", stats.misses),
        ...gauge("incontext_cache_entries", "Counts cached.", stats.entries),
      );
    } catch {
      // A disposed cache has no numbers; the rest still renders.
    }
  }
  return lines.join("\n") + "\n";
}

/** The shape of `GET /incontext/context`, documented in the README. */
function contextView(context: ProxyContext) {
  const { options, settings, state } = context;
  return {
    window: options.live?.().window ?? options.window,
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
