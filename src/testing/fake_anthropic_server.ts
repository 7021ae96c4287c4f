/**
 * A fake Anthropic `POST /v1/messages/count_tokens` for tests: it checks
 * the headers and body as strictly as the real API (unknown fields,
 * non-alternating roles and unpaired tool blocks get a 400), answers
 * `{input_tokens}` with a deterministic count, records every request, and
 * fails on demand with Anthropic's error bodies.
 *
 * @module
 */
import {
  anthropicRequestProblem,
  fakeAnthropicCount,
} from "./anthropic_rules.ts";
import {
  brokenAnswer,
  createFakeCore,
  type FakeIdentity,
  type FakeServerRequest,
  HANDLER_KEYS,
  htmlAnswer,
  liveView,
  positiveInteger,
  serveFake,
} from "./server_kit.ts";
import { SMALL_ANSWER_BYTES } from "../backends/_shared/http_count.ts";

export type { FakeServerRequest } from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` makes the
 * handler's `fetch` reject (a served fake's `url` points at a closed port);
 * `"slow"` holds each request until released (the fake disposed, its
 * `signal` or the request's own aborted); `"prompt-too-long"` answers 400
 * "prompt is too long: N tokens > L maximum"; `"http-401"`, `"http-429"`,
 * `"http-500"` (its message echoes the request and key, as a leak trap) and
 * `"http-529"` answer Anthropic's error bodies; `"non-json"` answers HTML; `"non-object"` a JSON array;
 * `"truncated-json"` the first half of a valid answer; `"reset"` breaks off
 * the connection mid-answer; `"oversized"` a valid answer over 64 KiB;
 * `"invalid-count"` answers `input_tokens` as a string.
 */
export type FakeAnthropicFault =
  | "none"
  | "refused"
  | "slow"
  | "prompt-too-long"
  | "http-401"
  | "http-429"
  | "http-500"
  | "http-529"
  | "non-json"
  | "non-object"
  | "truncated-json"
  | "reset"
  | "oversized"
  | "invalid-count";

const FAULTS: readonly FakeAnthropicFault[] = [
  "none",
  "refused",
  "slow",
  "prompt-too-long",
  "http-401",
  "http-429",
  "http-500",
  "http-529",
  "non-json",
  "non-object",
  "truncated-json",
  "reset",
  "oversized",
  "invalid-count",
];

const WHAT = "the fake Anthropic API";

const IDENTITY: FakeIdentity<FakeAnthropicFault> = {
  what: WHAT,
  faultName: `the fault of ${WHAT}`,
  faults: FAULTS,
  instead: "createFakeAnthropicHandler()",
};

/** Options for {@linkcode createFakeAnthropicHandler} and {@linkcode serveFakeAnthropic}. */
export interface FakeAnthropicOptions {
  /**
   * The key the fake requires in `x-api-key`: missing or different, it
   * answers 401 `authentication_error`.
   *
   * @default {undefined} any key, or none, is accepted
   */
  readonly apiKey?: string;
  /**
   * Counts a valid body.
   *
   * @default {ceil(rendered characters / 4) + 4 per message + 1600 per image}
   */
  readonly countTokens?: (body: { readonly [key: string]: unknown }) => number;
  /**
   * The model's input limit, quoted by the `"prompt-too-long"` fault.
   *
   * @default {200000}
   */
  readonly maxInputTokens?: number;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeAnthropicFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} held until the request (or a served fake) ends
   */
  readonly signal?: AbortSignal;
}

/** A fake count_tokens endpoint as a runtime-neutral request handler. */
export interface FakeAnthropicHandler {
  /** Answers one request as Anthropic would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeAnthropicFault;
}

/** A fake Anthropic API on a free local port; dispose it to close it. */
export interface FakeAnthropic extends AsyncDisposable {
  /** The base URL, `http://127.0.0.1:<port>`; under `"refused"`, a closed port. */
  readonly url: string;
  /** Every request received, oldest first. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeAnthropicFault;
  /** Closes the server (the same as disposing it). */
  close(): Promise<void>;
}

/**
 * Creates a fake Anthropic count_tokens endpoint as a request handler.
 *
 * @param options The required key, the counting rule, the first fault and a release signal.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `fault` is unknown or `maxInputTokens` is not a positive integer.
 *
 * @example Rejecting what the real API rejects
 * ```ts
 * import { createFakeAnthropicHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeAnthropicHandler();
 * const post = (body: unknown) =>
 *   fake.fetch("http://fake.test/v1/messages/count_tokens", {
 *     method: "POST",
 *     headers: { "anthropic-version": "2023-06-01", "content-type": "application/json" },
 *     body: JSON.stringify(body),
 *   });
 * const hello = { role: "user", content: "Hello" };
 * strictEqual((await post({ model: "claude-haiku-4-5", messages: [hello] })).status, 200);
 * strictEqual((await post({ model: "claude-haiku-4-5", messages: [hello, hello] })).status, 400);
 * strictEqual((await post({ model: "claude-haiku-4-5", messages: [hello], max_tokens: 5 })).status, 400);
 * ```
 */
export function createFakeAnthropicHandler(
  options: FakeAnthropicOptions = {},
): FakeAnthropicHandler {
  const { countTokens = fakeAnthropicCount, maxInputTokens = 200_000 } =
    options;
  positiveInteger(IDENTITY.what, "maxInputTokens", maxInputTokens);
  const core = createFakeCore(IDENTITY, options, {
    slow: () =>
      anthropicError(529, { type: "overloaded_error", message: "Overloaded" }),
    respond(recorded, { request, fault }) {
      if (recorded.path !== "/v1/messages/count_tokens") {
        return anthropicError(404, {
          type: "not_found_error",
          message: "Not found",
        });
      }
      if (request.method !== "POST") {
        return anthropicError(405, {
          type: "invalid_request_error",
          message: "Method not allowed",
        });
      }
      const refused = headerProblem(recorded.headers, options.apiKey);
      if (refused !== undefined) return refused;
      const problem = anthropicRequestProblem(recorded.body);
      if (problem !== undefined) {
        return anthropicError(400, {
          type: "invalid_request_error",
          message: problem,
        });
      }
      const tokens = countTokens(recorded.body as { [key: string]: unknown });
      return answer(fault, { tokens, limit: maxInputTokens, recorded });
    },
  });
  return liveView(core, HANDLER_KEYS);
}

/**
 * Serves a fake Anthropic API on `127.0.0.1`, on a port the system picks.
 * Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeAnthropicHandler} with a server of your own.
 *
 * @param options The required key, the counting rule, the first fault and a release signal.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Failing on demand
 * ```ts
 * import { serveFakeAnthropic } from "@incontext/incontext/testing";
 * import { AnthropicBackend } from "@incontext/incontext/anthropic";
 * import { CountError } from "@incontext/incontext";
 * import { rejects, strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeAnthropic({ fault: "http-429" });
 * const backend = new AnthropicBackend({ url: server.url, cache: null });
 * const request = { model: "claude-haiku-4-5", messages: [{ role: "user", content: "Hi" }] };
 * await rejects(backend.count(request, { contextLength: 200000 }), CountError);
 * strictEqual(server.requests.length, 1);
 * ```
 */
export async function serveFakeAnthropic(
  options: FakeAnthropicOptions = {},
): Promise<FakeAnthropic> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeAnthropicHandler,
    keys: ["requests", "fault"],
  });
}

function headerProblem(
  headers: Readonly<Record<string, string>>,
  apiKey: string | undefined,
): Response | undefined {
  const key = headers["x-api-key"];
  if (apiKey !== undefined && key === undefined) {
    return anthropicError(401, {
      type: "authentication_error",
      message: "x-api-key header is required",
    });
  }
  if (apiKey !== undefined && key !== apiKey) {
    return anthropicError(401, {
      type: "authentication_error",
      message: "invalid x-api-key",
    });
  }
  const version = headers["anthropic-version"];
  if (version === undefined) {
    return anthropicError(400, {
      type: "invalid_request_error",
      message: "anthropic-version: header is required",
    });
  }
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version)) {
    return anthropicError(400, {
      type: "invalid_request_error",
      message: "anthropic-version: invalid version",
    });
  }
  return undefined;
}

function answer(
  fault: FakeAnthropicFault,
  { tokens, limit, recorded }: {
    /** The request's count. */
    readonly tokens: number;
    /** The model's `maxInputTokens`, named by "prompt-too-long". */
    readonly limit: number;
    /** The request, echoed by "http-500" and "non-json". */
    readonly recorded: FakeServerRequest;
  },
): Response {
  const broken = brokenAnswer(
    fault,
    JSON.stringify({ input_tokens: tokens }),
    () =>
      `{"input_tokens":${tokens},"padding":"${
        "x".repeat(SMALL_ANSWER_BYTES)
      }"}`,
  );
  if (broken !== undefined) return broken;
  switch (fault) {
    case "prompt-too-long":
      return anthropicError(400, {
        type: "invalid_request_error",
        message: `prompt is too long: ${
          Math.max(tokens, limit + 1)
        } tokens > ${limit} maximum`,
      });
    case "http-401":
      return anthropicError(401, {
        type: "authentication_error",
        message: "invalid x-api-key",
      });
    case "http-429":
      return anthropicError(429, {
        type: "rate_limit_error",
        message:
          "Number of request tokens has exceeded your per-minute rate limit",
        headers: { "retry-after": "30" },
      });
    case "http-500":
      // Echoes the request and key: tests prove neither ever leaks.
      return anthropicError(500, {
        type: "api_error",
        message: `Internal server error for key ${
          recorded.headers["x-api-key"]
        }: ${recorded.text.slice(0, 2000)}`,
      });
    case "http-529":
      return anthropicError(529, {
        type: "overloaded_error",
        message: "Overloaded",
      });
    case "non-json":
      return htmlAnswer(
        `<html><body>Bad gateway: ${
          recorded.text.slice(0, 2000)
        }</body></html>`,
      );
    case "invalid-count":
      return Response.json({ input_tokens: String(tokens) });
    default:
      return Response.json({ input_tokens: tokens });
  }
}

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
function anthropicError(
  status: number,
  { type, message, headers = {} }: {
    readonly type: string;
    readonly message: string;
    /** Headers besides `request-id`. */
    readonly headers?: Record<string, string>;
  },
): Response {
  return Response.json(
    { type: "error", error: { type, message } },
    { status, headers: { "request-id": "req_fake", ...headers } },
  );
}
