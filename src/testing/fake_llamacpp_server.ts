/**
 * A fake llama.cpp server (`llama-server`) for tests: `POST /apply-template`,
 * `POST /tokenize`, `GET /props`, `GET /health` and a minimal
 * `POST /v1/chat/completions`, in llama.cpp's wire shapes and error bodies,
 * with a ChatML template and a deterministic word-level tokenizer. It
 * records every request and fails on demand.
 *
 * @module
 */
import {
  COMMON_FAULTS,
  createFakeCore,
  type FakeIdentity,
  type FakeServerRequest,
  htmlAnswer,
  positiveInteger,
  routedAnswer,
  serveFake,
} from "./server_kit.ts";
import { chatProblem, fakeTokenize, renderChatMl } from "./llamacpp_chat.ts";

export type { FakeServerRequest } from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` points the URL
 * at a closed port (the handler's `fetch` rejects with a `TypeError`);
 * `"slow"` holds each request until the fake is released or disposed (through
 * the handler's `fetch`, also until the request aborts), then answers 503;
 * `"reset"` breaks off the connection halfway through the body;
 * `"oversized"` streams a valid answer of several MiB; `"truncated-json"`,
 * `"non-json"` and `"non-object"` answer broken bodies; `"http-400"`,
 * `"http-429"`, `"http-500"` (whose message echoes the request body, as real
 * errors can) and `"http-503"` answer llama.cpp's error bodies;
 * `"invalid-prompt"`, `"invalid-tokens"` and `"invalid-n-ctx"` answer a
 * wrong `prompt`, `tokens` or `n_ctx`.
 */
export type FakeLlamaCppFault =
  | "none"
  | "refused"
  | "slow"
  | "reset"
  | "oversized"
  | "truncated-json"
  | "non-json"
  | "non-object"
  | "http-429"
  | "http-500"
  | "http-503"
  | "http-400"
  | "invalid-prompt"
  | "invalid-tokens"
  | "invalid-n-ctx";

const FAULTS: readonly FakeLlamaCppFault[] = [
  ...COMMON_FAULTS,
  "http-400",
  "invalid-prompt",
  "invalid-tokens",
  "invalid-n-ctx",
];

const IDENTITY: FakeIdentity<FakeLlamaCppFault> = {
  what: "the fake llama.cpp server",
  faultName: "the fake llama.cpp fault",
  faults: FAULTS,
  instead: "createFakeLlamaCppHandler()",
};

/** Paths anyone may call on a server with `--api-key`, as in llama.cpp. */
const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  "/health",
  "/v1/health",
  "/models",
  "/v1/models",
]);

/** Options for {@linkcode createFakeLlamaCppHandler} and {@linkcode serveFakeLlamaCpp}. */
export interface FakeLlamaCppOptions {
  /**
   * The context per slot, `default_generation_settings.n_ctx` of `/props`.
   *
   * @default {65536}
   */
  readonly nCtx?: number;
  /**
   * The server's `--api-key`: every path but `/health` and `/models` then
   * needs `Authorization: Bearer <apiKey>` (or `X-Api-Key`), else HTTP 401.
   *
   * @default {undefined} no key needed
   */
  readonly apiKey?: string;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeLlamaCppFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} `handler` holds them until their request aborts (fetch) or for good
   */
  readonly signal?: AbortSignal;
}

/** What {@linkcode createFakeLlamaCppHandler} and {@linkcode serveFakeLlamaCpp} share. */
export interface FakeLlamaCppState {
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeLlamaCppFault;
  /** When set, the fault applies only to this path (such as `"/tokenize"`). */
  faultPath: string | undefined;
}

/** A fake llama.cpp server as a runtime-neutral request handler. */
export interface FakeLlamaCppHandler extends FakeLlamaCppState {
  /** Answers one request as llama.cpp would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
}

/** A fake llama.cpp server on a free local port; dispose it to close it. */
export interface FakeLlamaCppServer extends FakeLlamaCppState, AsyncDisposable {
  /**
   * The server root, `http://127.0.0.1:<port>`; under the `"refused"` fault,
   * a port nothing listens on. Read it after setting `fault`.
   */
  readonly url: string;
}

/**
 * Creates a fake llama.cpp server as a request handler.
 *
 * @param options The context per slot, the API key, the first fault, and a
 * signal that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If `nCtx` is not a positive integer or `fault` is unknown.
 *
 * @example Rendering and tokenizing without a network
 * ```ts
 * import { createFakeLlamaCppHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const fake = createFakeLlamaCppHandler({ nCtx: 4096 });
 * const post = (path: string, body: unknown) =>
 *   fake.fetch(`http://llama.test${path}`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.json());
 * const { prompt } = await post("/apply-template", { messages: [{ role: "user", content: "Hi" }] });
 * deepStrictEqual(prompt, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
 * const { tokens } = await post("/tokenize", { content: prompt, add_special: true, parse_special: true });
 * deepStrictEqual(tokens.length, 10); // BOS, then 9 tokens of text
 * ```
 */
export function createFakeLlamaCppHandler(
  options: FakeLlamaCppOptions = {},
): FakeLlamaCppHandler {
  const { nCtx = 65536, apiKey } = options;
  positiveInteger(IDENTITY.what, "nCtx", nCtx);
  return createFakeCore(IDENTITY, options, {
    gate({ path, headers }) {
      if (apiKey === undefined || PUBLIC_PATHS.has(path)) return undefined;
      const given = headers["x-api-key"] ??
        headers["authorization"]?.replace(/^Bearer /, "");
      return given === apiKey ? undefined : llamaError(401, {
        message: "Invalid API Key",
        type: "authentication_error",
      });
    },
    slow: () =>
      llamaError(503, { message: "Loading model", type: "unavailable_error" }),
    respond: (received, { fault }) =>
      failure(fault, received.text) ??
        routedAnswer(fault, route(received, nCtx), {
          huge: () => huge(received.text, nCtx),
          wrong: wrongField,
        }),
  });
}

/**
 * Serves a fake llama.cpp server on `127.0.0.1`, on a port the system
 * picks. Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeLlamaCppHandler} with a server of your own.
 *
 * @param options The context per slot, the API key, the first fault, and a
 * signal that releases held requests.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If `nCtx` is not a positive integer or `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Counting against a served fake
 * ```ts
 * import { serveFakeLlamaCpp } from "@incontext/incontext/testing";
 * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeLlamaCpp({ nCtx: 8192 });
 * const backend = new LlamaCppBackend({ url: server.url, cache: null });
 * strictEqual(await backend.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 8192 }), 10);
 * ```
 */
export async function serveFakeLlamaCpp(
  options: FakeLlamaCppOptions = {},
): Promise<FakeLlamaCppServer> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeLlamaCppHandler,
    keys: ["requests", "fault", "faultPath"],
    withClose: false,
  });
}

/** llama.cpp's error body: `{"error": {code, message, type, ...extra}}`. */
function llamaError(
  code: number,
  { message, type, extra = {} }: {
    readonly message: string;
    readonly type: string;
    /** Fields after `type`, such as `n_ctx`. */
    readonly extra?: Record<string, unknown>;
  },
): Response {
  return Response.json({ error: { code, message, type, ...extra } }, {
    status: code,
  });
}

function failure(fault: string, text: string): Response | undefined {
  switch (fault) {
    case "http-400":
      return llamaError(400, {
        message: "Invalid request",
        type: "invalid_request_error",
      });
    case "http-429":
      return llamaError(429, {
        message: "Too many requests",
        type: "rate_limit_error",
      });
    case "http-500":
      // Real servers echo input in errors; the echo lets tests prove it never leaks.
      return llamaError(500, {
        message: `Failed to process ${text}`,
        type: "server_error",
      });
    case "http-503":
      return llamaError(503, {
        message: "Loading model",
        type: "unavailable_error",
      });
    case "non-json":
      return htmlAnswer(`<html><body>Bad gateway: ${text}</body></html>`);
    default:
      return undefined;
  }
}

/** The valid answer of each route. */
function route(
  { method, path, body }: FakeServerRequest,
  nCtx: number,
): Response {
  const key = `${method} ${path}`;
  if (key === "GET /health" || key === "GET /v1/health") {
    return Response.json({ status: "ok" });
  }
  if (key === "GET /props") return Response.json(props(nCtx));
  if (key === "POST /tokenize") {
    const request = isObject(body) ? body : {};
    const content = typeof request.content === "string" ? request.content : "";
    const tokens = fakeTokenize(
      content,
      request.add_special === true,
      request.parse_special !== false,
    ).map((token) => token.id);
    return Response.json({ tokens });
  }
  if (key === "POST /apply-template" || key === "POST /v1/chat/completions") {
    const problem = chatProblem(body);
    if (problem !== undefined) {
      return llamaError(400, {
        message: problem,
        type: "invalid_request_error",
      });
    }
    const prompt = renderChatMl(body as { [key: string]: unknown });
    return path === "/apply-template"
      ? Response.json({ prompt })
      : completion(prompt, nCtx);
  }
  return llamaError(404, {
    message: "File Not Found",
    type: "not_found_error",
  });
}

function props(nCtx: number): Record<string, unknown> {
  return {
    default_generation_settings: {
      id: 0,
      id_task: -1,
      n_ctx: nCtx,
      speculative: false,
      is_processing: false,
      params: { n_predict: -1, temperature: 0.8, top_k: 40, top_p: 0.95 },
    },
    total_slots: 1,
    model_path: "models/fake-chatml.gguf",
    chat_template: "{# ChatML #}",
    modalities: { vision: false, audio: false },
    build_info: "b0-fake",
  };
}

/** A one-token chat completion, or llama.cpp's 400 when the prompt does not fit. */
function completion(prompt: string, nCtx: number): Response {
  const promptTokens = fakeTokenize(prompt, true, true).length;
  if (promptTokens >= nCtx) {
    return llamaError(400, {
      message:
        "the request exceeds the available context size, try increasing it",
      type: "exceed_context_size_error",
      extra: { n_prompt_tokens: promptTokens, n_ctx: nCtx },
    });
  }
  return Response.json({
    id: "chatcmpl-fake",
    object: "chat.completion",
    created: 0,
    model: "fake-chatml",
    choices: [{
      index: 0,
      finish_reason: "stop",
      message: { role: "assistant", content: "ok" },
    }],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: 1,
      total_tokens: promptTokens + 1,
    },
  });
}

/** A valid-looking answer of several MiB: past every size cap of the backend. */
function huge(text: string, nCtx: number): string {
  const ids = Math.ceil((2 * 1024 * 1024 + 64 * (text.length + nCtx)) / 7);
  return `{"tokens":[${"151643,".repeat(ids)}1],"prompt":"","n_ctx":${nCtx}}`;
}

function wrongField(fault: string, ok: unknown): Response {
  const body = isObject(ok) ? { ...ok } : {};
  if (fault === "invalid-prompt" && "prompt" in body) body.prompt = 42;
  if (fault === "invalid-tokens" && "tokens" in body) body.tokens = [1, -1];
  if (fault === "invalid-n-ctx" && isObject(body.default_generation_settings)) {
    body.default_generation_settings = {
      ...body.default_generation_settings,
      n_ctx: 0,
    };
  }
  return Response.json(body);
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
