/**
 * The proxy's upstream call, bounded in time: the upstream must send its
 * response headers within one timeout and, once the body flows, never wait
 * longer than another for its next bytes. Either breach, the client's
 * disconnect or the proxy's own shutdown signal aborts the upstream request,
 * so nothing in flight can hang for good.
 */
import { getLogger } from "@logtape/logtape";
import { errorResponse } from "../bridges/answers.ts";
import { isJsonContentType } from "../bridges/endpoints.ts";
import { errorType } from "../core/error_type.ts";
import {
  forwardHeaders,
  type HeaderPairs,
  responseHeaders,
} from "./forward.ts";
import type { ProxyContext } from "./state.ts";
import { clearQueuedTimeout, setQueuedTimeout } from "../_internal/timeouts.ts";
import type { UsageTap } from "../anchors/usage.ts";
import { UploadAborted } from "./upload_aborted.ts";

const logger = getLogger(["incontext", "proxy"]);

/** Why the proxy aborted an upstream request itself. */
class UpstreamTimeout extends Error {
  constructor(readonly phase: "headers" | "body") {
    super(`The upstream exceeded the ${phase} timeout`);
    this.name = "UpstreamTimeout";
  }
}

/**
 * The upstream's answer before the client's Response exists: status, the
 * end-to-end headers (a fresh list the caller may add to), and the body,
 * read whole for a small JSON answer (`bytes`) or streamed under the idle
 * timeout. The client's Response is built once, by whoever finishes it.
 */
export interface UpstreamAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: HeaderPairs;
  /** The upstream's `content-type`, or null. */
  readonly contentType: string | null;
  /** The whole body of a small JSON answer. */
  readonly bytes?: Uint8Array<ArrayBuffer>;
  /** The streamed body of any other answer, or null without one. */
  readonly stream?: ReadableStream<Uint8Array> | null;
  /**
   * Makes the streamed body read its usage as it passes (call it before the
   * client reads): one stream for the idle guard and the usage tap.
   */
  readonly tap?: (tap: UsageTap) => void;
}

/** A guarded body and where to attach a usage tap. */
interface GuardedBody {
  readonly stream: ReadableStream<Uint8Array>;
  readonly tap: (tap: UsageTap) => void;
}

/** A request to send upstream. */
export interface Upstream {
  readonly request: Request;
  /** The upstream URL. */
  readonly target: string;
  /**
   * The body to send: the client's bytes or stream, a rewritten body
   * (a string), or null for none.
   */
  readonly body:
    | Uint8Array<ArrayBuffer>
    | string
    | ReadableStream<Uint8Array>
    | null;
  /** Whether the proxy reads the answer (a budgeted request). */
  readonly readsAnswer?: boolean;
}

/**
 * Sends the request to its target and returns the upstream's answer with
 * end-to-end headers only, or an OpenAI-shaped error: 502 unreachable, 503
 * shutting down, 504 timed out.
 */
export async function forward(
  upstream: Upstream,
  context: ProxyContext,
): Promise<Response> {
  const answer = await sendUpstream(upstream, context);
  if (answer instanceof Response) return answer;
  const { status, statusText, headers } = answer;
  return new Response(answer.bytes ?? answer.stream ?? null, {
    status,
    statusText,
    headers,
  });
}

/**
 * {@linkcode forward} without building the client's Response: the answer's
 * parts, or the error Response.
 */
export async function sendUpstream(
  { request, target, body, readsAnswer = false }: Upstream,
  context: ProxyContext,
): Promise<UpstreamAnswer | Response> {
  const { settings, state } = context;
  const abort = new AbortController();
  const unlink = linkAbort(abort, request.signal, context.options.signal);
  const init: RequestInit & { duplex?: "half" } = {
    method: request.method,
    headers: forwardHeaders(request.headers, {
      bodyChanged: typeof body === "string",
      readsAnswer,
    }),
    signal: abort.signal,
    redirect: "manual",
  };
  if (body instanceof ReadableStream) {
    init.body = body;
    init.duplex = "half";
  } else if (body !== null) init.body = body;
  const timer = setQueuedTimeout(
    () => abort.abort(new UpstreamTimeout("headers")),
    settings.upstreamTimeoutMs,
  );
  let response: Response;
  try {
    response = await (context.options.fetch ?? fetch)(target, init);
  } catch (error) {
    unlink();
    return failed(error, { request, own: abort.signal }, context);
  } finally {
    clearQueuedTimeout(timer);
  }
  state.upstream.inc({ status: String(response.status) });
  const contentType = response.headers.get("content-type");
  const answer = {
    status: response.status,
    statusText: response.statusText,
    headers: responseHeaders(response.headers),
    contentType,
  };
  if (response.body !== null && isSmallJson(response.headers, contentType)) {
    // A short JSON answer is read whole under one idle timer: cheaper than a
    // guarded stream, and the proxy reads its usage from the bytes anyway.
    const timer = setQueuedTimeout(
      () => abort.abort(new UpstreamTimeout("body")),
      settings.upstreamIdleTimeoutMs,
    );
    try {
      return { ...answer, bytes: new Uint8Array(await response.arrayBuffer()) };
    } catch (error) {
      return bodyFailed(error, { request, own: abort.signal }, context);
    } finally {
      clearQueuedTimeout(timer);
      unlink();
    }
  }
  if (response.body === null) {
    unlink();
    return { ...answer, stream: null };
  }
  const guarded = guardIdle(response.body, { abort, unlink }, context);
  return { ...answer, stream: guarded.stream, tap: guarded.tap };
}

/**
 * Makes `abort` follow the client's signal and the proxy's shutdown signal
 * until the returned function unlinks it (once the upstream exchange is
 * over, so that the long-lived shutdown signal holds no listener of a
 * finished request). Listeners rather than `AbortSignal.any`: a dependent
 * signal keeps weak references to each source, which costs Deno more per
 * request than two listeners added and removed.
 */
function linkAbort(
  abort: AbortController,
  client: AbortSignal,
  shutdown: AbortSignal | undefined,
): () => void {
  for (const source of [client, shutdown]) {
    if (source?.aborted) {
      abort.abort(source.reason);
      return () => {};
    }
  }
  const onAbort = (event: Event) => {
    unlink();
    abort.abort((event.target as AbortSignal).reason);
  };
  const unlink = () => {
    client.removeEventListener("abort", onAbort);
    shutdown?.removeEventListener("abort", onAbort);
  };
  client.addEventListener("abort", onAbort);
  shutdown?.addEventListener("abort", onAbort);
  return unlink;
}

/** The largest JSON answer the forwarder reads whole. */
const SMALL_JSON_BYTES = 8 * 1024 * 1024;

/** A JSON answer (of content type `type`) with a declared length the proxy may hold whole. */
function isSmallJson(headers: Headers, type: string | null): boolean {
  if (!isJsonContentType(type)) return false;
  const length = Number(headers.get("content-length") ?? NaN);
  return Number.isSafeInteger(length) && length <= SMALL_JSON_BYTES;
}

/**
 * The answer when the upstream's headers came but its body (read whole)
 * broke off: the client's disconnect, the proxy's own timeout or
 * shutdown, or a truncated body, which is none of "unreachable".
 */
function bodyFailed(
  error: unknown,
  { request, own }: { readonly request: Request; readonly own: AbortSignal },
  context: ProxyContext,
): Response {
  if (request.signal.aborted || own.aborted) {
    return failed(error, { request, own }, context);
  }
  upstreamTruncated(error, context);
  return errorResponse(502, {
    code: "upstream_truncated",
    message:
      "The upstream server ended its response before the end of its body through the incontext proxy",
    type: "upstream_error",
  });
}

/** Counts and logs an upstream body that ended before it was complete. */
function upstreamTruncated(error: unknown, context: ProxyContext): void {
  context.state.upstreamErrors.inc({ error: "truncated" });
  logger.warn("upstream body ended early: error={error}", {
    error: errorType(error),
  });
}

/** The answer to a failed upstream call; `own` is the proxy's signal of that call. */
function failed(
  error: unknown,
  { request, own }: { readonly request: Request; readonly own: AbortSignal },
  context: ProxyContext,
): Response {
  const { state, settings } = context;
  if (request.signal.aborted) {
    // The client went away: not the upstream's failure.
    clientGone(request, "upstream", context);
    return new Response(null, { status: 499 });
  }
  if (own.reason instanceof UpstreamTimeout) {
    state.timeouts.inc({ phase: "headers" });
    logger.warn("upstream sent no response headers in {seconds} s", {
      seconds: settings.upstreamTimeoutMs / 1000,
    });
    return errorResponse(504, {
      code: "upstream_timeout",
      message: `The upstream server sent no response within ${
        settings.upstreamTimeoutMs / 1000
      } seconds through the incontext proxy`,
      type: "upstream_error",
    });
  }
  if (context.options.signal?.aborted) {
    return errorResponse(503, {
      code: "proxy_shutting_down",
      message: "The incontext proxy is shutting down; retry the request",
      type: "upstream_error",
    });
  }
  state.upstream.inc({ status: "0" });
  state.upstreamErrors.inc({ error: "unreachable" });
  logger.error("upstream unreachable: error={error}", {
    error: errorType(error),
  });
  return errorResponse(502, {
    code: "upstream_unreachable",
    message:
      "The upstream server could not be reached through the incontext proxy",
    type: "upstream_error",
  });
}

/** Where a client was when it went away. */
export type DisconnectPhase = "upload" | "count" | "upstream";

const GONE: Record<DisconnectPhase, string> = {
  upload: "client closed the connection before its body was sent",
  count: "client closed the connection while its prompt was counted",
  upstream: "client closed the connection before the upstream answered",
};

/**
 * Counts and logs a client that went away before its answer began: at
 * `phase`, or while its body was still arriving (phase upload) whatever
 * the proxy was doing then.
 */
export function clientGone(
  request: Request,
  phase: DisconnectPhase,
  context: ProxyContext,
): void {
  const gone = request.signal.reason instanceof UploadAborted
    ? "upload"
    : phase;
  context.state.disconnects.inc({ phase: gone });
  logger.debug(GONE[gone]);
}

/**
 * The body as the client reads it, with a timer running only while the proxy
 * waits for the upstream's next bytes: a slow client is never mistaken for
 * an idle upstream, and no timer outlives the body.
 */
function guardIdle(
  body: ReadableStream<Uint8Array>,
  { abort, unlink }: { abort: AbortController; unlink: () => void },
  context: ProxyContext,
): GuardedBody {
  const idleMs = context.settings.upstreamIdleTimeoutMs;
  const reader = body.getReader();
  let client: ReadableStreamDefaultController<Uint8Array> | undefined;
  // An abort (the proxy's deadline, a timeout, the client gone) ends the
  // exchange here and now: the upstream read is cancelled and the client's
  // stream errored, whether a read is pending or the client is between
  // reads. fetch's own abort does not reliably reach a body in flight.
  const onAbort = () => {
    reader.cancel(abort.signal.reason).catch(() => {});
    try {
      client?.error(abort.signal.reason);
    } catch {
      // Closed or errored already.
    }
  };
  abort.signal.addEventListener("abort", onAbort, { once: true });
  const done = () => {
    abort.signal.removeEventListener("abort", onAbort);
    unlink();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      client = controller;
    },
    async pull(controller) {
      const timer = setQueuedTimeout(() => {
        context.state.timeouts.inc({ phase: "body" });
        logger.warn("upstream body idle for {seconds} s: stream ended", {
          seconds: idleMs / 1000,
        });
        abort.abort(new UpstreamTimeout("body"));
      }, idleMs);
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (error) {
        done();
        if (!abort.signal.aborted) upstreamTruncated(error, context);
        controller.error(error);
        return;
      } finally {
        clearQueuedTimeout(timer);
      }
      // Ended by the abort above: the client's stream is errored already.
      if (abort.signal.aborted) return;
      if (result.done) {
        done();
        // Usage is recorded before the client sees the end.
        tap?.end();
        controller.close();
      } else {
        controller.enqueue(result.value);
        tap?.push(result.value);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  let tap: UsageTap | undefined;
  return {
    stream,
    tap: (added) => {
      tap = added;
    },
  };
}
