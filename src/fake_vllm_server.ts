/**
 * A fake vLLM `/tokenize` endpoint for tests: it answers in vLLM's wire
 * shape, records every request, and fails on demand in the ways a real
 * server or network does.
 *
 * @module
 */

import { maxTokenizeResponseBytes } from "./_vllm_payload.ts";

/** A JSON object, as the fake parses a request body. */
type JsonBody = { readonly [key: string]: unknown };

/**
 * How the fake fails. `"none"` answers normally; `"refused"` points the URL
 * at a closed port (the handler's `fetch` rejects with a `TypeError`);
 * `"slow"` holds each request until the fake is released or disposed (through
 * the handler's `fetch`, also until the request aborts); `"stalled"` sends
 * the headers and the first half of the body, then holds the rest the same
 * way and breaks off; `"reset"` sends the headers and the first half of the
 * body, then breaks off the connection; `"oversized"` streams a valid answer
 * whose token list passes 64 KiB + 16 bytes per `maxModelLen` token (the size
 * cap of `VllmBackend`); `"truncated-json"` sends the first half of a valid
 * answer as a complete response; the others answer HTTP 429, 500 or 503, a
 * body that is not JSON or not an object, or an object whose `count` or
 * `max_model_len` is wrong.
 */
export type FakeVllmFault =
  | "none"
  | "refused"
  | "slow"
  | "stalled"
  | "reset"
  | "oversized"
  | "http-429"
  | "http-500"
  | "http-503"
  | "non-json"
  | "truncated-json"
  | "non-object"
  | "invalid-count"
  | "missing-count"
  | "negative-count"
  | "fractional-count"
  | "invalid-max-model-len"
  | "wrong-max-model-len";

const FAULTS: ReadonlySet<string> = new Set<FakeVllmFault>([
  "none",
  "refused",
  "slow",
  "stalled",
  "reset",
  "oversized",
  "http-429",
  "http-500",
  "http-503",
  "non-json",
  "truncated-json",
  "non-object",
  "invalid-count",
  "missing-count",
  "negative-count",
  "fractional-count",
  "invalid-max-model-len",
  "wrong-max-model-len",
]);

/** The real wire shape caps `tokens` at this length, to keep answers small. */
const MAX_TOKENS_SHOWN = 1024;

/** One request the fake received. */
export interface FakeVllmRequest {
  /** The HTTP method. */
  readonly method: string;
  /** The URL path, such as `/tokenize`. */
  readonly path: string;
  /** The URL query, such as `?tenant=a`, or `""`. */
  readonly search: string;
  /** The headers, with lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body, byte for byte as text. */
  readonly text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly body: unknown;
}

/** Options for {@linkcode createFakeVllmTokenizerHandler} and {@linkcode serveFakeVllmTokenizer}. */
export interface FakeVllmTokenizerOptions {
  /**
   * The `max_model_len` the fake reports.
   *
   * @default {65536}
   */
  readonly maxModelLen?: number;
  /**
   * Counts a well-formed request body.
   *
   * @default {`Math.ceil(text length / 4)`} where the text is the compact JSON of
   * `messages` followed by that of `tools` (if any), or the `prompt` of the text form
   */
  readonly countTokens?: (body: { readonly [key: string]: unknown }) => number;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeVllmFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted. Requests
   * through the handler's `fetch` are also released when their own signal
   * aborts; a served fake releases them when disposed.
   *
   * @default {undefined} `handler` holds them for good
   */
  readonly signal?: AbortSignal;
}

/** A fake `/tokenize` as a runtime-neutral request handler. */
export interface FakeVllmTokenizerHandler {
  /** Answers one request as vLLM's `/tokenize` would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeVllmRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeVllmFault;
}

/** A fake `/tokenize` server on a free local port; dispose it to close it. */
export interface FakeVllmTokenizer extends AsyncDisposable {
  /**
   * `http://127.0.0.1:<port>/tokenize`; under the `"refused"` fault, the same
   * path on a port nothing listens on. Read it after setting `fault`.
   */
  readonly url: string;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeVllmRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeVllmFault;
}

/**
 * Creates a fake vLLM `/tokenize` as a request handler, usable with any
 * server (`Deno.serve`, Node's, a test's `fetch`).
 *
 * @param options The reported `max_model_len`, the counting rule, the first
 * fault, and a signal that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `maxModelLen` is not a positive integer or `fault` is unknown.
 *
 * @example Counting without a network
 * ```ts
 * import { createFakeVllmTokenizerHandler } from "@incontext/incontext/testing";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeVllmTokenizerHandler({ maxModelLen: 4096, countTokens: () => 9 });
 * const backend = new VllmBackend({ url: "http://fake.test/tokenize", fetch: fake.fetch, cache: null });
 * strictEqual(await backend.count({ messages: [] }, { contextLength: 4096 }), 9);
 * strictEqual(fake.requests[0]?.text, '{"messages":[],"add_generation_prompt":true}');
 * ```
 */
export function createFakeVllmTokenizerHandler(
  options: FakeVllmTokenizerOptions = {},
): FakeVllmTokenizerHandler {
  const { maxModelLen = 65536, countTokens = defaultCount, signal } = options;
  if (!Number.isSafeInteger(maxModelLen) || maxModelLen < 1) {
    throw new RangeError(
      `Cannot create the fake vLLM tokenizer as 'maxModelLen' must be a positive integer: current value is ${maxModelLen}`,
    );
  }
  let fault = checkFault(options.fault ?? "none");
  const requests: FakeVllmRequest[] = [];

  async function respond(
    request: Request,
    hold: AbortSignal[],
  ): Promise<Response> {
    if (fault === "refused") {
      throw new TypeError("Connection refused by the fake vLLM tokenizer");
    }
    const text = await request.text();
    const body = parseJson(text);
    const { pathname: path, search } = new URL(request.url);
    requests.push({
      method: request.method,
      path,
      search,
      headers: Object.fromEntries(request.headers),
      text,
      body,
    });
    if (fault === "slow") {
      await released(hold);
      return new Response(null, { status: 503 });
    }
    if (request.method !== "POST") {
      return errorResponse(405, "Method Not Allowed");
    }
    if (path !== "/tokenize") return errorResponse(404, "Not Found");
    const counted = countBody(body, countTokens);
    if (typeof counted === "string") return errorResponse(400, counted);
    return answer(fault, counted, maxModelLen, text, hold);
  }

  // A server's request.signal is left alone: Deno.serve warns about listeners on it.
  function handler(request: Request): Promise<Response> {
    return respond(request, signal === undefined ? [] : [signal]);
  }

  async function fetchFake(
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> {
    const request = new Request(input, init);
    request.signal.throwIfAborted();
    const hold = signal === undefined
      ? [request.signal]
      : [request.signal, signal];
    const response = await respond(request, hold);
    // A real fetch rejects once aborted, whatever the server did meanwhile.
    request.signal.throwIfAborted();
    return response;
  }

  return {
    handler,
    fetch: fetchFake,
    requests,
    get fault(): FakeVllmFault {
      return fault;
    },
    set fault(value: FakeVllmFault) {
      fault = checkFault(value);
    },
  };
}

/**
 * Serves a fake vLLM `/tokenize` on `127.0.0.1`, on a port the system picks.
 * Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeVllmTokenizerHandler} with a server of your own.
 *
 * @param options The reported `max_model_len`, the counting rule, the first
 * fault, and a signal that releases held requests.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `maxModelLen` is not a positive integer or `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Failing on demand
 * ```ts
 * import { serveFakeVllmTokenizer } from "@incontext/incontext/testing";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { CountError } from "@incontext/incontext";
 * import { rejects, strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192 });
 * server.fault = "http-500";
 * const backend = new VllmBackend({ url: server.url, cache: null });
 * await rejects(backend.count({ messages: [] }, { contextLength: 8192 }), CountError);
 * strictEqual(server.requests.length, 1);
 * ```
 */
export async function serveFakeVllmTokenizer(
  options: FakeVllmTokenizerOptions = {},
): Promise<FakeVllmTokenizer> {
  if (typeof Deno === "undefined") {
    throw new TypeError(
      "Cannot serve the fake vLLM tokenizer as the runtime is not Deno: serve createFakeVllmTokenizerHandler() instead",
    );
  }
  const closing = new AbortController();
  const signal = options.signal === undefined
    ? closing.signal
    : AbortSignal.any([options.signal, closing.signal]);
  const fake = createFakeVllmTokenizerHandler({ ...options, signal });
  const refusedPort = closedPort();
  let server: Deno.HttpServer<Deno.NetAddr> | undefined;
  await new Promise<void>((resolve) => {
    server = Deno.serve({
      port: 0,
      hostname: "127.0.0.1",
      onListen: () => resolve(),
      // A request that reached the live port under "refused" (or a throwing
      // countTokens) gets a bare 500, without a log line.
      onError: () => new Response(null, { status: 500 }),
    }, fake.handler);
  });
  const running = server as Deno.HttpServer<Deno.NetAddr>;
  const url = `http://127.0.0.1:${running.addr.port}/tokenize`;
  const refusedUrl = `http://127.0.0.1:${refusedPort}/tokenize`;
  let disposed: Promise<void> | undefined;
  return {
    get url(): string {
      return fake.fault === "refused" ? refusedUrl : url;
    },
    requests: fake.requests,
    get fault(): FakeVllmFault {
      return fake.fault;
    },
    set fault(value: FakeVllmFault) {
      fake.fault = value;
    },
    [Symbol.asyncDispose](): Promise<void> {
      // Held requests must end first: shutdown() waits for every response.
      closing.abort();
      disposed ??= running.shutdown();
      return disposed;
    },
  };
}

/** A port that was free a moment ago and that nothing listens on now. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

function checkFault(value: FakeVllmFault): FakeVllmFault {
  if (!FAULTS.has(value)) {
    throw new RangeError(
      `Cannot set the fake vLLM fault as it must be one of ${
        [...FAULTS].join(", ")
      }`,
    );
  }
  return value;
}

/** Resolves once any of `signals` aborts; never, for none. */
function released(signals: AbortSignal[]): Promise<void> {
  const any = AbortSignal.any(signals);
  return new Promise((resolve) => {
    if (any.aborted) resolve();
    else any.addEventListener("abort", () => resolve(), { once: true });
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is JsonBody {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Counts a body as vLLM would accept it, or says why vLLM would answer 400. */
function countBody(
  body: unknown,
  countTokens: (body: JsonBody) => number,
): number | string {
  if (!isObject(body)) return "The request body must be a JSON object";
  if (!Array.isArray(body.messages) && typeof body.prompt !== "string") {
    return "Either 'messages' (a list) or 'prompt' (a string) is required";
  }
  return countTokens(body);
}

function defaultCount(body: JsonBody): number {
  if (typeof body.prompt === "string" && !Array.isArray(body.messages)) {
    return Math.ceil(body.prompt.length / 4);
  }
  const tools = body.tools === undefined ? "" : JSON.stringify(body.tools);
  return Math.ceil((JSON.stringify(body.messages).length + tools.length) / 4);
}

function answer(
  fault: FakeVllmFault,
  count: number,
  maxModelLen: number,
  text: string,
  hold: AbortSignal[],
): Response {
  const shown = Number.isSafeInteger(count) && count > 0
    ? Math.min(count, MAX_TOKENS_SHOWN)
    : 0;
  const tokens = Array.from(
    { length: shown },
    (_, index) => (index * 7919) % 32000 + 1,
  );
  const ok = { count, max_model_len: maxModelLen, tokens, token_strs: null };
  const broken = brokenBody(fault, ok, hold);
  if (broken !== undefined) return broken;
  switch (fault) {
    case "http-429":
      return errorResponse(429, "Too many requests: retry later");
    case "http-503":
      return errorResponse(503, "The engine is not ready");
    case "http-500":
      // Real servers echo input in errors; the echo lets tests prove it never leaks.
      return errorResponse(
        500,
        `Failed to tokenize the request: ${text.slice(0, 2000)}`,
      );
    case "non-json":
      return new Response(
        `<html><body>Bad gateway while tokenizing ${
          text.slice(0, 2000)
        }</body></html>`,
        {
          headers: { "content-type": "text/html" },
        },
      );
    case "non-object":
      return Response.json([ok]);
    case "invalid-count":
      return Response.json({ ...ok, count: String(count) });
    case "missing-count": {
      const { count: _count, ...rest } = ok;
      return Response.json(rest);
    }
    case "negative-count":
      return Response.json({ ...ok, count: -1 });
    case "fractional-count":
      return Response.json({ ...ok, count: count + 0.5 });
    case "invalid-max-model-len":
      return Response.json({ ...ok, max_model_len: 0 });
    case "wrong-max-model-len":
      return Response.json({ ...ok, max_model_len: maxModelLen * 2 });
    default:
      return Response.json(ok);
  }
}

/** The faults that break the body itself, or undefined for the others. */
function brokenBody(
  fault: FakeVllmFault,
  ok: { readonly count: number; readonly max_model_len: number },
  hold: AbortSignal[],
): Response | undefined {
  switch (fault) {
    case "truncated-json":
      return new Response(firstHalf(ok), { headers: JSON_HEADERS });
    case "reset":
      return streamed(firstHalf(ok), () => {
        throw new Error("The fake vLLM tokenizer reset the connection");
      });
    case "stalled":
      return streamed(firstHalf(ok), async () => {
        await released(hold);
        throw new Error("The fake vLLM tokenizer broke off a stalled answer");
      });
    case "oversized": {
      // 7 bytes per id ("151643,"): enough ids to pass the cap by themselves.
      const ids = Math.ceil(maxTokenizeResponseBytes(ok.max_model_len) / 7);
      const head = `{"count":${ok.count},"max_model_len":${ok.max_model_len}`;
      return streamed(
        `${head},"tokens":[${"151643,".repeat(ids)}151643],"token_strs":null}`,
      );
    }
    default:
      return undefined;
  }
}

const JSON_HEADERS = { "content-type": "application/json" };

/** The first half of an object's JSON: it lacks the closing brace, so it never parses. */
function firstHalf(value: object): string {
  const json = JSON.stringify(value);
  return json.slice(0, Math.floor(json.length / 2));
}

/**
 * `text` as a chunked body with no length, in 64 KiB parts, then `end`:
 * when it throws, the body errors and the server breaks off the connection.
 */
function streamed(text: string, end?: () => unknown): Response {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset < bytes.length) {
        controller.enqueue(bytes.subarray(offset, offset += 65_536));
        return;
      }
      await end?.();
      controller.close();
    },
  });
  return new Response(body, { headers: JSON_HEADERS });
}

function errorResponse(status: number, message: string): Response {
  const type = status === 400
    ? "BadRequestError"
    : status === 500
    ? "InternalServerError"
    : "Error";
  return Response.json({
    object: "error",
    message,
    type,
    param: null,
    code: status,
  }, { status });
}
