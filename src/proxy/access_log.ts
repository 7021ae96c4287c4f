/**
 * The access line: one log record per budgeted request, under the category
 * `incontext.access`, with what was decided and how long it took. It never
 * holds content: the method, the path without its query, counts, durations,
 * names of sources and actions, and the request id.
 */
import { getLogger } from "@logtape/logtape";
import { requestIdOf } from "../_internal/request_id.ts";

const logger = getLogger(["incontext", "access"]);

/** What one budgeted request's access line reports, filled in as it goes. */
export interface AccessTrace {
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  /** When the request arrived, from `performance.now()`. */
  readonly start: number;
  action: string;
  source: string | null;
  promptTokens: number | null;
  maxTokens: number | null;
  /** Time to the budget decision (reading the body and counting), ms. */
  countMs: number | null;
  /** Time from the send to the upstream's answer (headers; a small JSON answer whole), ms. */
  upstreamMs: number | null;
}

/** A trace for a request arriving now. */
export function startTrace(request: Request, url: URL): AccessTrace {
  return {
    requestId: requestIdOf(request.headers.get("x-request-id")),
    method: request.method,
    path: url.pathname,
    start: performance.now(),
    action: "forwarded",
    source: null,
    promptTokens: null,
    maxTokens: null,
    countMs: null,
    upstreamMs: null,
  };
}

/**
 * Writes the access line of a request whose response headers are ready, and
 * echoes the request id in them.
 */
export function logAccess(trace: AccessTrace, response: Response): Response {
  response.headers.set("x-request-id", trace.requestId);
  if (!logger.isEnabledFor("info")) return response;
  const round = (ms: number | null) =>
    ms === null ? null : Math.round(ms * 100) / 100;
  logger.info(
    "{method} {path} {status} action={action} source={source} prompt_tokens={promptTokens} max_tokens={maxTokens} count_ms={countMs} upstream_ms={upstreamMs} total_ms={totalMs} request_id={requestId}",
    {
      method: trace.method,
      path: trace.path,
      status: response.status,
      action: trace.action,
      source: trace.source,
      promptTokens: trace.promptTokens,
      maxTokens: trace.maxTokens,
      countMs: round(trace.countMs),
      upstreamMs: round(trace.upstreamMs),
      totalMs: round(performance.now() - trace.start),
      requestId: trace.requestId,
    },
  );
  return response;
}
