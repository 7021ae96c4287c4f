/**
 * A fake OpenAI `POST /v1/responses/input_tokens` for tests: it answers in
 * OpenAI's wire shape (`{"object":"response.input_tokens","input_tokens":N}`,
 * errors as `{"error":{"message","type","param","code"}}`), records every
 * request, and fails on demand.
 *
 * @module
 */

import {
  COUNT_FAULTS,
  createFakeCore,
  type FakeIdentity,
  type FakeServerRequest,
  HANDLER_KEYS,
  htmlAnswer,
  liveView,
  serveFake,
} from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` points the URL
 * at a closed port (the handler's `fetch` rejects with a `TypeError`);
 * `"slow"` holds each request until the fake is released or disposed (or
 * the request aborts); `"http-429"` answers OpenAI's `rate_limit_exceeded`;
 * `"http-500"` a `server_error` that echoes the request (as real errors
 * can), `"http-503"` an overload; `"non-json"`, `"non-object"` and
 * `"invalid-count"` break the answer.
 */
export type FakeOpenAIFault =
  | "none"
  | "refused"
  | "slow"
  | "http-429"
  | "http-500"
  | "http-503"
  | "non-json"
  | "non-object"
  | "invalid-count";

const FAULTS: readonly FakeOpenAIFault[] = COUNT_FAULTS;

const IDENTITY: FakeIdentity<FakeOpenAIFault> = {
  what: "the fake OpenAI API",
  faultName: "the fake OpenAI fault",
  faults: FAULTS,
  instead: "createFakeOpenAIHandler()",
};

/** The body fields the real endpoint accepts; any other is a 400. */
const ACCEPTED: ReadonlySet<string> = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "previous_response_id",
  "conversation",
  "reasoning",
  "text",
  "truncation",
]);

const PATH = "/v1/responses/input_tokens";

/** Options for {@linkcode createFakeOpenAIHandler} and {@linkcode serveFakeOpenAI}. */
export interface FakeOpenAIOptions {
  /**
   * The key the fake expects as `Authorization: Bearer <apiKey>`; other
   * keys get OpenAI's 401 `invalid_api_key`.
   *
   * @default {undefined} any key, or none, is accepted
   */
  readonly apiKey?: string;
  /**
   * Counts a well-formed body.
   *
   * @default {the number of words and punctuation marks in the compact JSON of `instructions`, `input` and `tools`}
   */
  readonly countTokens?: (body: { readonly [key: string]: unknown }) => number;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeOpenAIFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} held until the request aborts (or the served fake is disposed)
   */
  readonly signal?: AbortSignal;
}

/** A fake OpenAI API as a runtime-neutral request handler. */
export interface FakeOpenAIHandler {
  /** Answers one request as OpenAI would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeOpenAIRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeOpenAIFault;
}

/** A fake OpenAI API on a free local port; dispose it to close it. */
export interface FakeOpenAI extends AsyncDisposable {
  /**
   * The base URL, `http://127.0.0.1:<port>`; under the `"refused"` fault, a
   * port nothing listens on. Read it after setting `fault`.
   */
  readonly url: string;
  /** Every request received, oldest first. */
  readonly requests: FakeOpenAIRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeOpenAIFault;
  /** Closes the server (as disposing does). */
  close(): Promise<void>;
}

/**
 * Creates a fake OpenAI `/v1/responses/input_tokens` as a request handler.
 *
 * @param options The expected key, the counting rule, the first fault, and
 * a signal that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `fault` is unknown.
 *
 * @example Counting without a network
 * ```ts
 * import { createFakeOpenAIHandler } from "@incontext/incontext/testing";
 * import { OpenAIBackend } from "@incontext/incontext/openai";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeOpenAIHandler({ countTokens: () => 9 });
 * const backend = new OpenAIBackend({ url: "http://fake.test", fetch: fake.fetch, cache: null });
 * const counted = await backend.count({ model: "gpt-5", input: "Hi", stream: true }, {
 *   contextLength: 400000,
 *   kind: "responses",
 * });
 * strictEqual(counted.tokens, 9);
 * strictEqual(fake.requests[0]?.text, '{"model":"gpt-5","input":"Hi"}');
 * ```
 */
export function createFakeOpenAIHandler(
  options: FakeOpenAIOptions = {},
): FakeOpenAIHandler {
  const { countTokens = defaultCount, apiKey } = options;
  const core = createFakeCore(IDENTITY, options, {
    slow: () =>
      openaiError(503, {
        message: "The fake was released",
        type: "server_error",
        code: null,
      }),
    respond(recorded, { request, fault }) {
      const problem = rejection(request, recorded, apiKey);
      if (problem !== undefined) return problem;
      return answer(fault, countTokens(recorded.body as Body), recorded.text);
    },
  });
  return liveView(core, HANDLER_KEYS);
}

/**
 * Serves a fake OpenAI API on `127.0.0.1`, on a port the system picks.
 * Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeOpenAIHandler} with a server of your own.
 *
 * @param options The expected key, the counting rule, the first fault, and
 * a signal that releases held requests.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example A rate limit fails the count, without retries
 * ```ts
 * import { serveFakeOpenAI } from "@incontext/incontext/testing";
 * import { OpenAIBackend } from "@incontext/incontext/openai";
 * import { CountError } from "@incontext/incontext";
 * import { rejects, strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeOpenAI({ fault: "http-429" });
 * const backend = new OpenAIBackend({ url: server.url, cache: null });
 * const options = { contextLength: 400000, kind: "responses" } as const;
 * await rejects(backend.count({ model: "gpt-5", input: "Hi" }, options), CountError);
 * strictEqual(server.requests.length, 1);
 * ```
 */
export async function serveFakeOpenAI(
  options: FakeOpenAIOptions = {},
): Promise<FakeOpenAI> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeOpenAIHandler,
    keys: ["requests", "fault"],
  });
}

type Body = { readonly [key: string]: unknown };

/** OpenAI's answer to a request it refuses before counting, if any. */
function rejection(
  request: Request,
  recorded: FakeServerRequest,
  apiKey: string | undefined,
): Response | undefined {
  const { path } = recorded;
  if (request.method !== "POST" || path !== PATH) {
    return openaiError(404, {
      message: `Invalid URL (${request.method} ${path})`,
      type: "invalid_request_error",
      code: null,
    });
  }
  const sent = request.headers.get("authorization");
  if (apiKey !== undefined && sent !== `Bearer ${apiKey}`) {
    // OpenAI quotes the start of a wrong key: tests prove it never leaks.
    const shown = (sent ?? "").replace(/^Bearer /, "").slice(0, 12);
    return openaiError(401, {
      message: `Incorrect API key provided: ${shown}****.`,
      type: "invalid_request_error",
      code: "invalid_api_key",
    });
  }
  const body = recorded.body;
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return openaiError(400, {
      message: "We could not parse the JSON body of your request.",
      type: "invalid_request_error",
      code: null,
    });
  }
  const unknown = Object.keys(body).find((key) => !ACCEPTED.has(key));
  if (unknown !== undefined) {
    return openaiError(400, {
      message: `Unknown parameter: '${unknown}'.`,
      type: "invalid_request_error",
      code: "unknown_parameter",
      param: unknown,
    });
  }
  return undefined;
}

/** Words and punctuation marks: deterministic, and longer text counts more. */
function defaultCount(body: Body): number {
  const text = ["instructions", "input", "tools"]
    .map((field) =>
      body[field] === undefined ? "" : JSON.stringify(body[field])
    )
    .join(" ");
  return text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu)?.length ?? 0;
}

function answer(fault: FakeOpenAIFault, count: number, text: string): Response {
  const ok = { object: "response.input_tokens", input_tokens: count };
  switch (fault) {
    case "http-429":
      return openaiError(429, {
        message: "Rate limit reached for requests. Please try again in 20ms.",
        type: "requests",
        code: "rate_limit_exceeded",
      });
    case "http-500":
      // Real errors can echo input; the echo lets tests prove it never leaks.
      return openaiError(500, {
        message: `The server had an error while processing your request: ${
          text.slice(0, 2000)
        }`,
        type: "server_error",
        code: null,
      });
    case "http-503":
      return openaiError(503, {
        message: "The engine is currently overloaded, please try again later.",
        type: "server_error",
        code: null,
      });
    case "non-json":
      return htmlAnswer(`<html>Bad gateway ${text.slice(0, 2000)}</html>`);
    case "non-object":
      return Response.json([ok]);
    case "invalid-count":
      return Response.json({ ...ok, input_tokens: String(count) });
    default:
      return Response.json(ok);
  }
}

function openaiError(
  status: number,
  { message, type, code, param = null }: {
    readonly message: string;
    readonly type: string;
    readonly code: string | null;
    readonly param?: string | null;
  },
): Response {
  return Response.json({ error: { message, type, param, code } }, { status });
}

/** One request the fake received: method, path, search, headers, text and parsed body. */
export type FakeOpenAIRequest = FakeServerRequest;
