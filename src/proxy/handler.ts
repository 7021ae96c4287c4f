/**
 * The budgeting proxy's handler: one request's way from routing to the
 * answer. Its option checks live in `options.ts`, its bookkeeping in
 * `bookkeeping.ts`.
 *
 * @module
 */
import type { RequestKind } from "../core/backend.ts";
import type { BridgeOptions } from "../bridges/options.ts";
import {
  decide,
  type DecisionHeaders,
  type Sending,
  withDecisionHeaders,
} from "../bridges/decision.ts";
import { isJsonContentType, pathKind } from "../bridges/endpoints.ts";
import { errorResponse } from "../bridges/answers.ts";
import {
  declaresBody,
  framedBody,
  type HeaderPairs,
  unsendableMethod,
  upstreamUrl,
} from "./forward.ts";
import { readLimited } from "../_internal/limited_read.ts";
import {
  clientGone,
  forward,
  sendUpstream,
  type UpstreamAnswer,
} from "./upstream.ts";
import { TimedBackend } from "./timed_backend.ts";
import { type ProxyContext, ProxyState } from "./state.ts";
import { anchorEstimate, type AnchorKeys } from "../anchors/keys.ts";
import { ownEndpoint } from "./endpoints.ts";
import { Readiness } from "./readiness.ts";
import { type AccessTrace, logAccess, startTrace } from "./access_log.ts";
import {
  type ProxyHandler,
  type ProxyOptions,
  readSettings,
} from "./options.ts";
import { observe } from "./bookkeeping.ts";
import { AnchorStore } from "../anchors/store.ts";
import { readUsage, tapFor, tapUsage, type Usage } from "../anchors/usage.ts";
import { effectiveField } from "../core/request.ts";
import { setImmediate } from "node:timers";

/**
 * Creates the budgeting proxy handler.
 *
 * @param options The upstream, the budget options and the proxy's bounds.
 * @returns The handler.
 * @throws {RangeError} When a budget option or bound is invalid.
 * @throws {TypeError} When `upstream` is not an http(s) URL.
 *
 * @example Budgeting through the proxy
 * ```ts
 * import { createProxyHandler } from "@incontext/incontext/proxy";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const proxy = createProxyHandler({
 *   upstream: "http://upstream.test",
 *   window: 55705,
 *   contextLength: 65536,
 *   backend: new FakeBackend({ count: 5 }),
 *   fetch: async (input, init) => Response.json({ sent: JSON.parse(String(init?.body)) }),
 * });
 * const response = await proxy(new Request("http://proxy.test/v1/chat/completions", {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ messages: [], max_tokens: 65536 }),
 * }));
 * strictEqual((await response.json()).sent.max_tokens, 55700);
 * strictEqual(response.headers.get("x-incontext-action"), "set");
 * ```
 */
export function createProxyHandler(options: ProxyOptions): ProxyHandler {
  const settings = readSettings(options);
  const state = new ProxyState(
    options.anchors ?? new AnchorStore({ maxEntries: settings.anchorEntries }),
    settings.recentDecisions,
  );
  const backend = new TimedBackend(options.backend, (seconds, outcome) => {
    state.tokenizer.observe(seconds, { outcome });
  });
  const bridge: BridgeOptions = {
    ...options,
    backend,
    anchor: (parsed) => anchorEstimate(state.anchors, parsed),
  };
  const readiness = options.readiness ?? new Readiness();
  const context = { options, settings, state, backend, bridge, readiness };
  return async function incontextProxy(request, info) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/incontext/")) {
      return await ownEndpoint({ request, url, info }, context);
    }
    const unsendable = unsendableMethod(request.method);
    if (unsendable !== undefined) {
      state.requests.inc({ route: "passthrough", action: "refused_method" });
      return errorResponse(501, {
        code: "method_not_supported",
        message: `Cannot forward the request as ${unsendable}`,
      });
    }
    const target = upstreamUrl(settings.upstream, url);
    const kind = request.method === "POST" ? pathKind(url.pathname) : undefined;
    const type = request.headers.get("content-type");
    // The upstream's reading decides (vLLM's FastAPI routes): a body with no
    // content type is read as JSON, as is a JSON type; any other is not.
    if (kind === undefined || (type !== null && !isJsonContentType(type))) {
      return await passthrough(request, target, context);
    }
    const trace = startTrace(request, url);
    const response = await budgeted(
      request,
      { target, kind, typed: type !== null, trace },
      context,
    );
    return logAccess(trace, response);
  };
}

/** Forwards a request the proxy does not budget, framed as the client framed it. */
async function passthrough(
  request: Request,
  target: string,
  context: ProxyContext,
): Promise<Response> {
  const { state, settings } = context;
  let body: Awaited<ReturnType<typeof framedBody>>;
  try {
    body = await framedBody(request, settings.maxRequestBytes);
  } catch {
    state.requests.inc({ route: "passthrough", action: "unreadable" });
    return unreadable(request, "forward", context);
  }
  if (
    (request.method === "GET" || request.method === "HEAD") &&
    (body !== null || declaresBody(request.headers))
  ) {
    // fetch cannot send it, and dropping the body would alter the request.
    state.requests.inc({ route: "passthrough", action: "refused_method" });
    return errorResponse(501, {
      code: "method_not_supported",
      message:
        `Cannot forward the request as a ${request.method} request with a body is not forwarded by the incontext proxy`,
    });
  }
  state.requests.inc({ route: "passthrough", action: "forwarded" });
  return await forward({ request, target, body }, context);
}

/** The answer to a body the client broke off: none when it went away. */
function unreadable(
  request: Request,
  what: "budget" | "forward",
  context: ProxyContext,
): Response {
  if (request.signal.aborted) {
    clientGone(request, "upload", context);
    return new Response(null, { status: 499 });
  }
  return errorResponse(400, {
    code: "invalid_body",
    message: `Cannot ${what} the request as its body could not be read in full`,
  });
}

/** Where a budgeted request goes, and its access trace. */
interface Budgeted {
  readonly target: string;
  readonly kind: RequestKind;
  /** Whether the client declared a (JSON) content type. */
  readonly typed: boolean;
  readonly trace: AccessTrace;
}

async function budgeted(
  request: Request,
  { target, kind, typed, trace }: Budgeted,
  context: ProxyContext,
): Promise<Response> {
  const { settings, state, bridge } = context;
  const route = kind;
  const bytes = await readBody(request, settings.maxRequestBytes);
  if (bytes === "unreadable") {
    trace.action = "unreadable";
    state.requests.inc({ route, action: "unreadable" });
    return unreadable(request, "budget", context);
  }
  if (bytes === undefined) {
    await request.body?.cancel().catch(() => {});
    trace.action = "too_large";
    state.requests.inc({ route, action: "too_large" });
    return errorResponse(413, {
      code: "request_too_large",
      message:
        `Cannot budget the request as its body exceeds ${settings.maxRequestBytes} bytes; reduce the length of the messages or the size of attached media`,
    });
  }
  const decision = await decide(bytes, {
    kind,
    bridge: context.options.live
      ? { ...bridge, ...context.options.live() }
      : bridge,
    signal: request.signal,
    request: {
      id: trace.requestId,
      url: request.url,
      headers: request.headers,
    },
    bodies: state.bodies,
  });
  if (request.signal.aborted) {
    // The client went away while its prompt was counted: nothing to send,
    // and no count to report.
    state.requests.inc({ route, action: "client_closed" });
    clientGone(request, "count", context);
    return new Response(null, { status: 499 });
  }
  trace.countMs = performance.now() - trace.start;
  switch (decision.kind) {
    case "malformed":
      if (!typed) {
        // Not JSON, and not declared to be: it goes on as it came.
        state.requests.inc({ route: "passthrough", action: "forwarded" });
        const none = bytes.byteLength === 0 &&
          request.headers.get("content-length") === null;
        return await forward(
          { request, target, body: none ? null : bytes },
          context,
        );
      }
      trace.action = "malformed";
      state.requests.inc({ route, action: "malformed" });
      return errorResponse(400, {
        code: "invalid_json",
        message: `Cannot budget the request as ${decision.reason}`,
      });
    case "reject":
      observe(decision, { kind, trace }, context);
      return decision.response;
    case "send":
      return await send(
        request,
        { target, bytes, decision, kind, trace },
        context,
      );
  }
}

/** What {@linkcode send} sends upstream. */
interface Outgoing {
  readonly target: string;
  /** The body as it came. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly decision: Sending;
  readonly kind: RequestKind;
  readonly trace: AccessTrace;
}

/** Sends a budgeted request upstream and answers with the upstream's response. */
async function send(
  request: Request,
  { target, bytes, decision, kind, trace }: Outgoing,
  context: ProxyContext,
): Promise<Response> {
  const sent = performance.now();
  const upstream = sendUpstream(
    {
      request,
      target,
      body: decision.body === undefined ? bytes : decision.body,
      readsAnswer: true,
    },
    context,
  );
  const sending = upstream.then(
    (answer) => {
      trace.upstreamMs = performance.now() - sent;
      return answer;
    },
  );
  // The bookkeeping (anchor keys, the decision record) must not delay the
  // send: network I/O runs on this thread's loop, so work done right now
  // holds the request back. A streamed answer's first bytes are what its
  // client waits for: the bookkeeping runs after one turn of the loop, while
  // the upstream works. So does a long conversation's, whose bookkeeping
  // (a canonical form and a hash per message) would otherwise delay its
  // answer. A short one's whole answer comes at the end of a generation: its
  // bookkeeping waits for it, which spares each request a turn of the loop.
  if (streams(decision) || bytes.byteLength >= OVERLAP_BYTES) {
    await nextTurn();
  } else await sending;
  const conversation = observe(decision, { kind, trace }, context);
  const answer = await sending;
  context.state.upstreamSeconds.observe(trace.upstreamMs! / 1000);
  return finish(answer, { decision, conversation }, context);
}

/**
 * From this body size on, a whole answer's bookkeeping runs while the
 * upstream works: it costs more than the turn of the loop it waits for.
 */
const OVERLAP_BYTES = 64 * 1024;

/** Whether the client asked for a streamed answer. */
function streams(decision: Sending): boolean {
  return effectiveField(decision.sent, "stream") === true;
}

/** Resolves after the event loop has polled I/O once (`setImmediate` runs in the check phase, after the poll). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The body, or undefined past `limit` bytes, or "unreadable" when the client
 * broke it off (a connection closed early, a body shorter than its length).
 */
async function readBody(
  request: Request,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | undefined | "unreadable"> {
  const length = request.headers.get("content-length");
  const declared = Number(length ?? "0");
  if (declared > limit) return undefined;
  try {
    // (Reading `request.body` would build a stream the fast path does not need.)
    if (length === null) return await readLimited(request.body, limit);
    // A declared length within the limit: the server's framing holds the
    // body to it, so it is read whole at once, which costs a fraction of
    // reading chunk by chunk. A body longer than it declared (a Request
    // built in process) still gets the limit, once read.
    const bytes = new Uint8Array(await request.arrayBuffer());
    return bytes.byteLength > limit ? undefined : bytes;
  } catch {
    return "unreadable";
  }
}

/**
 * The response the client gets: the upstream's, with the decision headers,
 * built once. A response's usage is learned on the way: from a JSON body
 * read whole (the forwarder already buffered it), or by tapping an SSE
 * stream; the bytes stay as they are. It anchors a chat conversation, and
 * checks an exact count.
 */
function finish(
  answer: UpstreamAnswer | Response,
  { decision, conversation }: {
    readonly decision: Sending;
    readonly conversation: AnchorKeys | undefined;
  },
  context: ProxyContext,
): Response {
  // An error the proxy wrote itself (502, 503, 504): only the headers to add.
  if (answer instanceof Response) {
    return withDecisionHeaders(answer, decision.headers);
  }
  const { status, statusText, bytes, stream = null } = answer;
  const headers = withHeaders(answer.headers, decision.headers);
  const init = { status, statusText, headers };
  const keys = conversation?.keys;
  const ok = status >= 200 && status < 300;
  // A refusal or an error reports no usage of the prompt: nothing to learn.
  const verify = ok
    ? context.state.verification.checkerFor(decision.result, context.backend)
    : undefined;
  if (!ok || (keys === undefined && verify === undefined)) {
    return new Response(bytes ?? stream, init);
  }
  const record = (usage: Usage) => {
    verify?.(usage);
    if (keys !== undefined) context.state.anchors.recordKeys(keys, usage);
  };
  if (bytes !== undefined) {
    learnFromJson(bytes, record);
    return new Response(bytes, init);
  }
  if (stream === null || answer.tap === undefined) {
    return new Response(
      stream && tapUsage(stream, answer.contentType, record),
      init,
    );
  }
  // The idle guard's stream reads the usage too: one stream, one hop a chunk.
  const tap = tapFor(answer.contentType, record);
  if (tap !== undefined) answer.tap(tap);
  return new Response(stream, init);
}

/** `headers` with `added` set in place of any same-named ones. */
function withHeaders(
  headers: HeaderPairs,
  added: DecisionHeaders,
): HeaderPairs {
  if (added.length === 0) return headers;
  // At most four names: a scan costs less than building a set each request.
  const kept = headers.filter(([name]) =>
    !added.some(([replaced]) => replaced === name)
  );
  kept.push(...added);
  return kept;
}

const decoder = new TextDecoder();

function learnFromJson(
  bytes: Uint8Array,
  record: (usage: Usage) => void,
): void {
  try {
    const usage = readUsage(JSON.parse(decoder.decode(bytes)));
    if (usage !== undefined) record(usage);
  } catch {
    // Not JSON after all, or no usage: nothing to learn, the bytes go on.
  }
}
