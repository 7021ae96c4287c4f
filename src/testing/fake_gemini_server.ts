/**
 * A fake Gemini `POST /v1beta/models/{model}:countTokens` for tests: it
 * checks the key and body as strictly as the real API (unknown fields and
 * non-alternating roles get a 400 `INVALID_ARGUMENT`), answers
 * `{totalTokens, promptTokensDetails}` with a deterministic count, records
 * every request, and fails on demand with Google's error bodies.
 *
 * @module
 */
import { fakeGeminiCount, geminiRequestProblem } from "./gemini_rules.ts";
import {
  brokenAnswer,
  createFakeCore,
  type FakeIdentity,
  type FakeServerRequest,
  HANDLER_KEYS,
  htmlAnswer,
  liveView,
  serveFake,
} from "./server_kit.ts";
import { SMALL_ANSWER_BYTES } from "../backends/_shared/http_count.ts";

export type { FakeServerRequest } from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` makes the
 * handler's `fetch` reject (a served fake's `url` points at a closed port);
 * `"slow"` holds each request until released; `"http-400"` (the input
 * token count exceeds the model's limit), `"http-403"`,
 * `"http-429"` (`RESOURCE_EXHAUSTED`), `"http-500"` (its message echoes the
 * request and key, as a leak trap) and `"http-503"` (`UNAVAILABLE`) answer
 * Google's error bodies; `"non-json"` answers HTML; `"non-object"` a JSON array;
 * `"truncated-json"` the first half of a valid answer; `"reset"` breaks off
 * the connection mid-answer; `"oversized"` a valid answer over 64 KiB; `"invalid-count"`
 * answers `totalTokens` as a string.
 */
export type FakeGeminiFault =
  | "none"
  | "refused"
  | "slow"
  | "http-400"
  | "http-403"
  | "http-429"
  | "http-500"
  | "http-503"
  | "non-json"
  | "non-object"
  | "truncated-json"
  | "reset"
  | "oversized"
  | "invalid-count";

const FAULTS: readonly FakeGeminiFault[] = [
  "none",
  "refused",
  "slow",
  "http-400",
  "http-403",
  "http-429",
  "http-500",
  "http-503",
  "non-json",
  "non-object",
  "truncated-json",
  "reset",
  "oversized",
  "invalid-count",
];

const WHAT = "the fake Gemini API";

const IDENTITY: FakeIdentity<FakeGeminiFault> = {
  what: WHAT,
  faultName: `the fault of ${WHAT}`,
  faults: FAULTS,
  instead: "createFakeGeminiHandler()",
};

const PATH = /^\/v1beta\/models\/([^/]+):countTokens$/;

/** Options for {@linkcode createFakeGeminiHandler} and {@linkcode serveFakeGemini}. */
export interface FakeGeminiOptions {
  /**
   * The key the fake requires, in `x-goog-api-key` or the `key` query
   * parameter: missing, it answers 403 `PERMISSION_DENIED`; different,
   * 400 `INVALID_ARGUMENT` "API key not valid".
   *
   * @default {undefined} any key, or none, is accepted
   */
  readonly apiKey?: string;
  /**
   * Counts a valid body.
   *
   * @default {ceil(rendered characters / 4) + 3 per turn + 258 per inline image}
   */
  readonly countTokens?: (body: { readonly [key: string]: unknown }) => number;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeGeminiFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} held until the request (or a served fake) ends
   */
  readonly signal?: AbortSignal;
}

/** A fake countTokens endpoint as a runtime-neutral request handler. */
export interface FakeGeminiHandler {
  /** Answers one request as Gemini would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeGeminiFault;
}

/** A fake Gemini API on a free local port; dispose it to close it. */
export interface FakeGemini extends AsyncDisposable {
  /** The base URL, `http://127.0.0.1:<port>`; under `"refused"`, a closed port. */
  readonly url: string;
  /** Every request received, oldest first. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeGeminiFault;
  /** Closes the server (the same as disposing it). */
  close(): Promise<void>;
}

/**
 * Creates a fake Gemini countTokens endpoint as a request handler.
 *
 * @param options The required key, the counting rule, the first fault and a release signal.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `fault` is unknown.
 *
 * @example Rejecting what the real API rejects
 * ```ts
 * import { createFakeGeminiHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeGeminiHandler();
 * const post = (body: unknown) =>
 *   fake.fetch("http://fake.test/v1beta/models/gemini-2.5-flash:countTokens", {
 *     method: "POST",
 *     headers: { "content-type": "application/json" },
 *     body: JSON.stringify(body),
 *   });
 * const hello = { role: "user", parts: [{ text: "Hello" }] };
 * const ok = await post({ generateContentRequest: { model: "models/gemini-2.5-flash", contents: [hello] } });
 * strictEqual(ok.status, 200);
 * strictEqual((await post({ contents: [hello], temperature: 0 })).status, 400);
 * ```
 */
export function createFakeGeminiHandler(
  options: FakeGeminiOptions = {},
): FakeGeminiHandler {
  const { countTokens = fakeGeminiCount } = options;
  const core = createFakeCore(IDENTITY, options, {
    slow: () => googleError(503, "UNAVAILABLE", "The service is unavailable."),
    respond(recorded, { request, fault }) {
      const model = PATH.exec(recorded.path)?.[1];
      if (model === undefined || request.method !== "POST") {
        return googleError(404, "NOT_FOUND", "Requested entity was not found.");
      }
      const refused = keyProblem(recorded, options.apiKey);
      if (refused !== undefined) return refused;
      const problem = geminiRequestProblem(recorded.body);
      if (problem !== undefined) {
        return googleError(400, "INVALID_ARGUMENT", problem);
      }
      const tokens = countTokens(recorded.body as { [key: string]: unknown });
      return answer(fault, tokens, recorded);
    },
  });
  return liveView(core, HANDLER_KEYS);
}

/**
 * Serves a fake Gemini API on `127.0.0.1`, on a port the system picks.
 * Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeGeminiHandler} with a server of your own.
 *
 * @param options The required key, the counting rule, the first fault and a release signal.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Failing on demand
 * ```ts
 * import { serveFakeGemini } from "@incontext/incontext/testing";
 * import { GeminiBackend } from "@incontext/incontext/gemini";
 * import { CountError } from "@incontext/incontext";
 * import { rejects, strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeGemini({ fault: "http-429" });
 * const backend = new GeminiBackend({ url: server.url, model: "gemini-2.5-flash", cache: null });
 * const request = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
 * await rejects(backend.count(request, { contextLength: 1048576 }), CountError);
 * strictEqual(server.requests.length, 1);
 * ```
 */
export async function serveFakeGemini(
  options: FakeGeminiOptions = {},
): Promise<FakeGemini> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeGeminiHandler,
    keys: ["requests", "fault"],
  });
}

function keyProblem(
  recorded: FakeServerRequest,
  apiKey: string | undefined,
): Response | undefined {
  if (apiKey === undefined) return undefined;
  const key = recorded.headers["x-goog-api-key"] ??
    new URLSearchParams(recorded.search).get("key") ?? undefined;
  if (key === undefined) {
    return googleError(
      403,
      "PERMISSION_DENIED",
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  }
  return key === apiKey ? undefined : googleError(
    400,
    "INVALID_ARGUMENT",
    "API key not valid. Please pass a valid API key.",
  );
}

function answer(
  fault: FakeGeminiFault,
  tokens: number,
  recorded: FakeServerRequest,
): Response {
  const broken = brokenAnswer(
    fault,
    JSON.stringify({ totalTokens: tokens }),
    () =>
      `{"totalTokens":${tokens},"padding":"${"x".repeat(SMALL_ANSWER_BYTES)}"}`,
  );
  if (broken !== undefined) return broken;
  switch (fault) {
    case "http-400":
      return googleError(
        400,
        "INVALID_ARGUMENT",
        `The input token count (${tokens}) exceeds the maximum number of tokens allowed (${
          tokens - 1
        }).`,
      );
    case "http-403":
      return googleError(
        403,
        "PERMISSION_DENIED",
        "The caller does not have permission",
      );
    case "http-429":
      return googleError(
        429,
        "RESOURCE_EXHAUSTED",
        "Resource has been exhausted (e.g. check quota).",
      );
    case "http-500":
      // Echoes the request and key: tests prove neither ever leaks.
      return googleError(
        500,
        "INTERNAL",
        `An internal error has occurred for key ${
          recorded.headers["x-goog-api-key"]
        } at ${recorded.path}${recorded.search}: ${
          recorded.text.slice(0, 2000)
        }`,
      );
    case "http-503":
      return googleError(
        503,
        "UNAVAILABLE",
        "The model is overloaded. Please try again later.",
      );
    case "non-json":
      return htmlAnswer(
        `<html><body>Bad gateway: ${
          recorded.text.slice(0, 2000)
        }</body></html>`,
      );
    case "invalid-count":
      return Response.json({ totalTokens: String(tokens) });
    default:
      return Response.json({
        totalTokens: tokens,
        promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }],
      });
  }
}

/** Google's error body: `{"error":{"code","message","status"}}`. */
function googleError(status: number, code: string, message: string): Response {
  return Response.json(
    { error: { code: status, message, status: code } },
    { status },
  );
}
