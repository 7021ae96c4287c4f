/**
 * A fake vLLM `/tokenize` endpoint for tests: it answers in vLLM's wire
 * shape, records every request, and fails on demand in the ways a real
 * server or network does.
 *
 * @module
 */

import {
  brokenAnswer,
  createFakeCore,
  type FakeIdentity,
  type FakeServerRequest,
  firstHalf,
  HANDLER_KEYS,
  htmlAnswer,
  liveView,
  positiveInteger,
  released,
  serveFake,
  streamed,
} from "./server_kit.ts";
import { maxTokenizeResponseBytes } from "@incontext/engine/vllm";
import { NEWEST_VLLM_RELEASE } from "@incontext/engine/vllm";

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

const FAULTS: readonly FakeVllmFault[] = [
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
];

const IDENTITY: FakeIdentity<FakeVllmFault> = {
  what: "the fake vLLM tokenizer",
  faultName: "the fake vLLM fault",
  faults: FAULTS,
  instead: "createFakeVllmTokenizerHandler()",
  path: "/tokenize",
};

/** The real wire shape caps `tokens` at this length, to keep answers small. */
const MAX_TOKENS_SHOWN = 1024;

/** One request the fake received: method, path, search, headers, text and parsed body. */
export type FakeVllmRequest = FakeServerRequest;

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
  /**
   * The release `GET /version` reports; `null` answers that route 404, as a
   * proxy without it would.
   *
   * @default {"0.20.0"} the newest release whose rules incontext knows
   */
  readonly version?: string | null;
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
  const {
    maxModelLen = 65536,
    countTokens = defaultCount,
    version = NEWEST_VLLM_RELEASE,
  } = options;
  positiveInteger(IDENTITY.what, "maxModelLen", maxModelLen);
  const core = createFakeCore(IDENTITY, options, {
    slow: () => new Response(null, { status: 503 }),
    respond(received, { request, fault, hold }) {
      if (request.method === "GET" && received.path === "/version") {
        if (fault !== "none" || version === null) {
          return errorResponse(404, "Not Found");
        }
        return Response.json({ version });
      }
      if (request.method !== "POST") {
        return errorResponse(405, "Method Not Allowed");
      }
      if (received.path !== "/tokenize") return errorResponse(404, "Not Found");
      const counted = countBody(received.body, countTokens);
      if (typeof counted === "string") return errorResponse(400, counted);
      return answer(fault, {
        count: counted,
        maxModelLen,
        text: received.text,
        hold,
      });
    },
  });
  return liveView(core, HANDLER_KEYS);
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
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeVllmTokenizerHandler,
    keys: ["requests", "fault"],
    withClose: false,
  });
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

/** What {@linkcode answer} answers with, besides the fault. */
interface Answered {
  /** The request's count. */
  readonly count: number;
  readonly maxModelLen: number;
  /** The request's text, echoed by the faults that echo it. */
  readonly text: string;
  /** Where a stalled answer's hold signals go. */
  readonly hold: AbortSignal[];
}

function answer(
  fault: FakeVllmFault,
  { count, maxModelLen, text, hold }: Answered,
): Response {
  const shown = Number.isSafeInteger(count) && count > 0
    ? Math.min(count, MAX_TOKENS_SHOWN)
    : 0;
  const tokens = Array.from(
    { length: shown },
    (_, index) => (index * 7919) % 32000 + 1,
  );
  const ok = { count, max_model_len: maxModelLen, tokens, token_strs: null };
  const broken = fault === "stalled"
    ? stalled(JSON.stringify(ok), hold)
    : brokenAnswer(fault, JSON.stringify(ok), () => huge(ok));
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
      return htmlAnswer(
        `<html><body>Bad gateway while tokenizing ${
          text.slice(0, 2000)
        }</body></html>`,
      );
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

/** The first half of the answer, then held, then broken off. */
function stalled(ok: string, hold: AbortSignal[]): Response {
  return streamed(firstHalf(ok), async () => {
    await released(hold);
    throw new Error("The fake vLLM tokenizer broke off a stalled answer");
  });
}

/** A valid answer whose token list passes the size cap by itself. */
function huge(ok: { readonly count: number; readonly max_model_len: number }) {
  // 7 bytes per id ("151643,"): enough ids to pass the cap by themselves.
  const ids = Math.ceil(maxTokenizeResponseBytes(ok.max_model_len) / 7);
  const head = `{"count":${ok.count},"max_model_len":${ok.max_model_len}`;
  return `${head},"tokens":[${"151643,".repeat(ids)}151643],"token_strs":null}`;
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
