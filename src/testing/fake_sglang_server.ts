/**
 * A fake SGLang `POST /tokenize` for tests: text only, as SGLang's is (a
 * chat body gets SGLang's 400), answering `{tokens, count, max_model_len}`
 * with a deterministic tokenizer, recording every request, and failing on
 * demand.
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
  positiveInteger,
  serveFake,
} from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` points the URL
 * at a closed port (the handler's `fetch` rejects with a `TypeError`);
 * `"slow"` holds each request until the fake is released or disposed (or
 * the request aborts); `"http-429"`, `"http-500"` (echoing the request, as
 * real errors can) and `"http-503"` answer SGLang's error shape;
 * `"non-json"`, `"non-object"` and `"invalid-count"` break the answer.
 */
export type FakeSglangFault =
  | "none"
  | "refused"
  | "slow"
  | "http-429"
  | "http-500"
  | "http-503"
  | "non-json"
  | "non-object"
  | "invalid-count";

const FAULTS: readonly FakeSglangFault[] = COUNT_FAULTS;

const IDENTITY: FakeIdentity<FakeSglangFault> = {
  what: "the fake SGLang server",
  faultName: "the fake SGLang fault",
  faults: FAULTS,
  instead: "createFakeSglangHandler()",
};

/** Turns text into token ids; may be async (a real tokenizer loads files). */
export type FakeSglangTokenize = (
  text: string,
  addSpecialTokens: boolean,
) => readonly number[] | Promise<readonly number[]>;

/** Options for {@linkcode createFakeSglangHandler} and {@linkcode serveFakeSglang}. */
export interface FakeSglangOptions {
  /**
   * The `max_model_len` reported: SGLang reports its tokenizer's, which need
   * not be the served context length.
   *
   * @default {131072}
   */
  readonly maxModelLen?: number;
  /**
   * The tokenizer.
   *
   * @default {one id per word or punctuation mark, after a BOS id 1 when special tokens are added}
   */
  readonly tokenize?: FakeSglangTokenize;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeSglangFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} held until the request aborts (or the served fake is disposed)
   */
  readonly signal?: AbortSignal;
}

/** A fake SGLang `/tokenize` as a runtime-neutral request handler. */
export interface FakeSglangHandler {
  /** Answers one request as SGLang would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeSglangRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeSglangFault;
}

/** A fake SGLang server on a free local port; dispose it to close it. */
export interface FakeSglang extends AsyncDisposable {
  /**
   * The base URL, `http://127.0.0.1:<port>`; under the `"refused"` fault, a
   * port nothing listens on. Read it after setting `fault`.
   */
  readonly url: string;
  /** Every request received, oldest first. */
  readonly requests: FakeSglangRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeSglangFault;
  /** Closes the server (as disposing does). */
  close(): Promise<void>;
}

/**
 * Creates a fake SGLang `/tokenize` as a request handler.
 *
 * @param options The reported `max_model_len`, the tokenizer, the first
 * fault, and a signal that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `maxModelLen` is not a positive integer or `fault` is unknown.
 *
 * @example Tokenizing text, refusing chat
 * ```ts
 * import { createFakeSglangHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual, strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeSglangHandler({ maxModelLen: 32768 });
 * const post = (body: unknown) =>
 *   fake.fetch("http://fake.test/tokenize", { method: "POST", body: JSON.stringify(body) });
 * const answer = await post({ prompt: "Hello, world", add_special_tokens: false });
 * deepStrictEqual((await answer.json()).count, 3);
 * strictEqual((await post({ messages: [] })).status, 400);
 * ```
 */
export function createFakeSglangHandler(
  options: FakeSglangOptions = {},
): FakeSglangHandler {
  const { maxModelLen = 131072, tokenize = defaultTokenize } = options;
  positiveInteger(IDENTITY.what, "maxModelLen", maxModelLen);
  const core = createFakeCore(IDENTITY, options, {
    slow: () => sglangError(503, "The fake was released"),
    async respond(recorded, { request, fault }) {
      if (request.method !== "POST") {
        return sglangError(405, "Method Not Allowed");
      }
      if (recorded.path !== "/tokenize" && recorded.path !== "/v1/tokenize") {
        return sglangError(404, "Not Found");
      }
      const problem = validate(recorded.body);
      if (problem !== undefined) return sglangError(400, problem);
      const body = recorded.body as {
        prompt: string;
        add_special_tokens?: boolean;
      };
      const tokens = [
        ...await tokenize(body.prompt, body.add_special_tokens !== false),
      ];
      return answer(fault, { tokens, maxModelLen, text: recorded.text });
    },
  });
  return liveView(core, HANDLER_KEYS);
}

/**
 * Serves a fake SGLang `/tokenize` on `127.0.0.1`, on a port the system
 * picks. Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeSglangHandler} with a server of your own.
 *
 * @param options The reported `max_model_len`, the tokenizer, the first
 * fault, and a signal that releases held requests.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `maxModelLen` is not a positive integer or `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Counting a completion
 * ```ts
 * import { serveFakeSglang } from "@incontext/incontext/testing";
 * import { SglangBackend } from "@incontext/incontext/sglang";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeSglang();
 * const backend = new SglangBackend({ url: server.url, dir: "/models/unused", cache: null });
 * strictEqual(await backend.count({ prompt: "Once upon" }, { contextLength: 8192, kind: "completion" }), 3);
 * strictEqual(server.requests[0]?.text, '{"prompt":"Once upon","add_special_tokens":true}');
 * await backend[Symbol.asyncDispose]();
 * ```
 */
export async function serveFakeSglang(
  options: FakeSglangOptions = {},
): Promise<FakeSglang> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeSglangHandler,
    keys: ["requests", "fault"],
  });
}

/** Why SGLang's request validation would answer 400, if it would. */
function validate(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return "1 validation error for TokenizeRequest: Input should be a valid dictionary";
  }
  const { prompt, add_special_tokens: special } = body as Record<
    string,
    unknown
  >;
  if (prompt === undefined) {
    return "1 validation error for TokenizeRequest\nprompt\n  Field required";
  }
  if (typeof prompt !== "string") {
    return "1 validation error for TokenizeRequest\nprompt\n  Input should be a valid string";
  }
  if (special !== undefined && typeof special !== "boolean") {
    return "1 validation error for TokenizeRequest\nadd_special_tokens\n  Input should be a valid boolean";
  }
  return undefined;
}

/** One id per word or punctuation mark (a stable hash), after BOS (1) when asked. */
function defaultTokenize(text: string, addSpecialTokens: boolean): number[] {
  const ids = (text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? []).map(
    (piece) => {
      let hash = 2166136261;
      for (let i = 0; i < piece.length; i++) {
        hash = Math.imul(hash ^ piece.charCodeAt(i), 16777619) >>> 0;
      }
      return 2 + hash % 150000;
    },
  );
  return addSpecialTokens ? [1, ...ids] : ids;
}

function answer(
  fault: FakeSglangFault,
  { tokens, maxModelLen, text }: {
    readonly tokens: number[];
    readonly maxModelLen: number;
    /** The request's text, echoed by "http-500" and "non-json". */
    readonly text: string;
  },
): Response {
  const ok = { tokens, count: tokens.length, max_model_len: maxModelLen };
  switch (fault) {
    case "http-429":
      return sglangError(429, "Too many requests: retry later");
    case "http-500":
      // Real errors can echo input; the echo lets tests prove it never leaks.
      return sglangError(
        500,
        `Internal error while tokenizing ${text.slice(0, 2000)}`,
      );
    case "http-503":
      return sglangError(503, "The server is not ready");
    case "non-json":
      return htmlAnswer(`<html>Bad gateway ${text.slice(0, 2000)}</html>`);
    case "non-object":
      return Response.json([ok]);
    case "invalid-count":
      return Response.json({ ...ok, count: String(ok.count) });
    default:
      return Response.json(ok);
  }
}

/** SGLang's `ErrorResponse`. */
function sglangError(status: number, message: string): Response {
  const type = status === 400
    ? "BadRequestError"
    : status >= 500
    ? "InternalServerError"
    : "Error";
  return Response.json(
    { object: "error", message, type, param: null, code: status },
    { status },
  );
}

/** One request the fake received: method, path, search, headers, text and parsed body. */
export type FakeSglangRequest = FakeServerRequest;
