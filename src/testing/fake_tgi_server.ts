/**
 * A fake Hugging Face text-generation-inference (TGI) server for tests:
 * `POST /chat_tokenize`, `POST /tokenize`, `GET /info`, `GET /health` and
 * a minimal `POST /v1/chat/completions` that validates lengths as TGI does,
 * in TGI's wire shapes and error bodies, with a ChatML template and a
 * deterministic word-level tokenizer. It records every request and fails on
 * demand.
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
import { fakeTokenize, renderChatMl } from "./llamacpp_chat.ts";

export type { FakeServerRequest } from "./server_kit.ts";

/**
 * How the fake fails. `"none"` answers normally; `"refused"` points the URL
 * at a closed port (the handler's `fetch` rejects with a `TypeError`);
 * `"slow"` holds each request until the fake is released or disposed (through
 * the handler's `fetch`, also until the request aborts), then answers 503;
 * `"reset"` breaks off the connection halfway through the body;
 * `"oversized"` streams a valid answer of several MiB; `"truncated-json"`,
 * `"non-json"` and `"non-object"` answer broken bodies; `"http-422"`,
 * `"http-429"`, `"http-500"` (whose message echoes the request body, as real
 * errors can) and `"http-503"` answer TGI's error bodies;
 * `"invalid-tokens"` and `"invalid-info"` answer a wrong token list or
 * wrong limits.
 */
export type FakeTgiFault =
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
  | "http-422"
  | "invalid-tokens"
  | "invalid-info";

const FAULTS: readonly FakeTgiFault[] = [
  ...COMMON_FAULTS,
  "http-422",
  "invalid-tokens",
  "invalid-info",
];

const IDENTITY: FakeIdentity<FakeTgiFault> = {
  what: "the fake TGI server",
  faultName: "the fake TGI fault",
  faults: FAULTS,
  instead: "createFakeTgiHandler()",
};

/** Options for {@linkcode createFakeTgiHandler} and {@linkcode serveFakeTgi}. */
export interface FakeTgiOptions {
  /**
   * `max_total_tokens` of `/info`: prompt + `max_new_tokens` at most.
   *
   * @default {65536}
   */
  readonly maxTotalTokens?: number;
  /**
   * `max_input_tokens` of `/info`: the longest prompt.
   *
   * @default {maxTotalTokens - 1} as TGI's launcher picks
   */
  readonly maxInputTokens?: number;
  /**
   * TGI's `--api-key`: every path then needs `Authorization: Bearer <apiKey>`,
   * else an empty HTTP 401.
   *
   * @default {undefined} no key needed
   */
  readonly apiKey?: string;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeTgiFault;
  /**
   * Releases the requests the `"slow"` fault holds, once aborted.
   *
   * @default {undefined} `handler` holds them until their request aborts (fetch) or for good
   */
  readonly signal?: AbortSignal;
}

/** What {@linkcode createFakeTgiHandler} and {@linkcode serveFakeTgi} share. */
export interface FakeTgiState {
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeServerRequest[];
  /** The current fault; setting it affects the requests that arrive next. */
  fault: FakeTgiFault;
  /** When set, the fault applies only to this path (such as `"/info"`). */
  faultPath: string | undefined;
}

/** A fake TGI server as a runtime-neutral request handler. */
export interface FakeTgiHandler extends FakeTgiState {
  /** Answers one request as TGI would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
}

/** A fake TGI server on a free local port; dispose it to close it. */
export interface FakeTgiServer extends FakeTgiState, AsyncDisposable {
  /**
   * The server root, `http://127.0.0.1:<port>`; under the `"refused"` fault,
   * a port nothing listens on. Read it after setting `fault`.
   */
  readonly url: string;
}

interface Limits {
  readonly maxTotalTokens: number;
  readonly maxInputTokens: number;
}

/**
 * Creates a fake TGI server as a request handler.
 *
 * @param options The limits, the API key, the first fault, and a signal
 * that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If a limit is not a positive integer, `maxInputTokens`
 * is not below `maxTotalTokens`, or `fault` is unknown.
 *
 * @example Tokenizing a chat without a network
 * ```ts
 * import { createFakeTgiHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeTgiHandler({ maxTotalTokens: 4096 });
 * const answer = await fake.fetch("http://tgi.test/chat_tokenize", {
 *   method: "POST",
 *   body: JSON.stringify({ messages: [{ role: "user", content: "Hi" }] }),
 * }).then((r) => r.json());
 * strictEqual(answer.templated_text, "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
 * strictEqual(answer.tokenize_response.length, 10);
 * ```
 */
export function createFakeTgiHandler(
  options: FakeTgiOptions = {},
): FakeTgiHandler {
  const limits = checkLimits(options);
  const { apiKey } = options;
  return createFakeCore(IDENTITY, options, {
    gate: ({ headers }) =>
      apiKey !== undefined &&
        headers["authorization"]?.toLowerCase() !==
          `bearer ${apiKey}`.toLowerCase()
        ? new Response(null, { status: 401 })
        : undefined,
    slow: () => tgiError(503, "unhealthy", "healthcheck"),
    respond: (received, { fault }) =>
      failure(fault, received.text) ??
        routedAnswer(fault, route(received, limits), {
          huge: () => huge(received.text, limits),
          wrong: wrongField,
        }),
  });
}

/**
 * Serves a fake TGI server on `127.0.0.1`, on a port the system picks.
 * Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeTgiHandler} with a server of your own.
 *
 * @param options The limits, the API key, the first fault, and a signal
 * that releases held requests.
 * @returns The running fake; dispose it to close the server.
 * @throws {RangeError} If a limit is invalid or `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Counting against a served fake
 * ```ts
 * import { serveFakeTgi } from "@incontext/incontext/testing";
 * import { TgiBackend } from "@incontext/incontext/tgi";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using server = await serveFakeTgi({ maxTotalTokens: 8192 });
 * const backend = new TgiBackend({ url: server.url, cache: null });
 * strictEqual(await backend.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 8192 }), 10);
 * ```
 */
export async function serveFakeTgi(
  options: FakeTgiOptions = {},
): Promise<FakeTgiServer> {
  return await serveFake(options, {
    identity: IDENTITY,
    create: createFakeTgiHandler,
    keys: ["requests", "fault", "faultPath"],
    withClose: false,
  });
}

function checkLimits(options: FakeTgiOptions): Limits {
  const { maxTotalTokens = 65536 } = options;
  const { maxInputTokens = maxTotalTokens - 1 } = options;
  for (
    const [name, value] of Object.entries({ maxTotalTokens, maxInputTokens })
  ) {
    positiveInteger(IDENTITY.what, name, value);
  }
  if (maxInputTokens >= maxTotalTokens) {
    throw new RangeError(
      `Cannot create the fake TGI server as 'maxInputTokens' must be below 'maxTotalTokens': current value is ${maxInputTokens}`,
    );
  }
  return { maxTotalTokens, maxInputTokens };
}

/** TGI's error body: `{"error": message, "error_type": type}`. */
function tgiError(status: number, error: string, type: string): Response {
  return Response.json({ error, error_type: type }, { status });
}

function failure(fault: string, text: string): Response | undefined {
  switch (fault) {
    case "http-422":
      return tgiError(
        422,
        "Input validation error: invalid request",
        "validation",
      );
    case "http-429":
      return tgiError(429, "Model is overloaded", "overloaded");
    case "http-500":
      // Real servers echo input in errors; the echo lets tests prove it never leaks.
      return tgiError(
        500,
        `Request failed during generation: ${text}`,
        "generation",
      );
    case "http-503":
      return tgiError(503, "unhealthy", "healthcheck");
    case "non-json":
      return htmlAnswer(`<html><body>Bad gateway: ${text}</body></html>`);
    default:
      return undefined;
  }
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Why TGI's serde would refuse a `ChatRequest` body (axum answers 422 with
 * plain text), or `undefined` when it deserializes.
 */
function chatShapeProblem(body: unknown): string | undefined {
  if (!isObject(body)) return "invalid type: expected struct ChatRequest";
  if (!Array.isArray(body.messages)) return "missing field `messages`";
  for (const message of body.messages) {
    if (!isObject(message) || typeof message.role !== "string") {
      return "missing field `role`";
    }
    const { content } = message;
    const tools = Array.isArray(message.tool_calls);
    if (!(typeof content === "string" || Array.isArray(content) || tools)) {
      return "data did not match any variant of untagged enum MessageContent";
    }
  }
  if (body.max_tokens !== undefined && body.max_tokens !== null) {
    const cap = body.max_tokens;
    if (typeof cap !== "number" || !Number.isInteger(cap) || cap < 0) {
      return "invalid type for `max_tokens`: expected u32";
    }
  }
  return undefined;
}

/** The rendering: tools are dropped by `tool_choice: "none"`, as TGI does. */
function templated(body: { [key: string]: unknown }): string {
  const tools = body.tool_choice === "none" ? undefined : body.tools;
  return renderChatMl({ ...body, tools }, "<s>");
}

function tokenList(text: string, addSpecial: boolean) {
  return fakeTokenize(text, addSpecial, true).map(({ id, start, stop }) => ({
    id,
    text: text.slice(start, stop),
    start,
    stop,
  }));
}

function route(
  { method, path, body }: FakeServerRequest,
  limits: Limits,
): Response {
  const key = `${method} ${path}`;
  if (key === "GET /health") return new Response(null);
  if (key === "GET /info") return Response.json(info(limits));
  if (key === "POST /tokenize") {
    if (!isObject(body) || typeof body.inputs !== "string") {
      return new Response(
        "Failed to deserialize the JSON body into the target type: missing field `inputs`",
        { status: 422 },
      );
    }
    return Response.json(
      tokenList(body.inputs, body.add_special_tokens !== false),
    );
  }
  if (key === "POST /chat_tokenize" || key === "POST /v1/chat/completions") {
    const problem = chatShapeProblem(body);
    if (problem !== undefined) {
      return new Response(
        `Failed to deserialize the JSON body into the target type: ${problem}`,
        { status: 422 },
      );
    }
    const request = body as { [key: string]: unknown };
    if (
      request.response_format !== undefined &&
      request.response_format !== null && Array.isArray(request.tools)
    ) {
      return tgiError(
        422,
        "Grammar and tools are mutually exclusive",
        "tool_error",
      );
    }
    const text = templated(request);
    return path === "/chat_tokenize"
      ? Response.json({
        tokenize_response: tokenList(text, false),
        templated_text: text,
      })
      : completion(text, request.max_tokens, limits);
  }
  return new Response(null, { status: 404 });
}

function info(limits: Limits): Record<string, unknown> {
  return {
    model_id: "fake/chatml",
    model_sha: null,
    model_pipeline_tag: "text-generation",
    max_concurrent_requests: 128,
    max_best_of: 2,
    max_stop_sequences: 4,
    max_input_tokens: limits.maxInputTokens,
    max_total_tokens: limits.maxTotalTokens,
    validation_workers: 2,
    max_client_batch_size: 4,
    router: "text-generation-router",
    version: "3.3.6",
    sha: null,
    docker_label: null,
  };
}

/** TGI's validation of a chat request's lengths, then a one-token completion. */
function completion(
  text: string,
  maxTokens: unknown,
  limits: Limits,
): Response {
  const input = fakeTokenize(text, false, true).length;
  if (input > limits.maxInputTokens) {
    return tgiError(
      422,
      `Input validation error: \`inputs\` must have less than ${limits.maxInputTokens} tokens. Given: ${input}`,
      "validation",
    );
  }
  const maxNew = typeof maxTokens === "number"
    ? maxTokens
    : Math.max(0, limits.maxTotalTokens - input);
  if (input + maxNew > limits.maxTotalTokens) {
    return tgiError(
      422,
      `Input validation error: \`inputs\` tokens + \`max_new_tokens\` must be <= ${limits.maxTotalTokens}. Given: ${input} \`inputs\` tokens and ${maxNew} \`max_new_tokens\``,
      "validation",
    );
  }
  return Response.json({
    object: "chat.completion",
    id: "",
    created: 0,
    model: "fake/chatml",
    system_fingerprint: "3.3.6-native",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "ok" },
      logprobs: null,
      finish_reason: "stop",
    }],
    usage: {
      prompt_tokens: input,
      completion_tokens: 1,
      total_tokens: input + 1,
    },
  });
}

/** A valid-looking answer of several MiB: past every size cap of the backend. */
function huge(text: string, limits: Limits): string {
  const size = 2 * 1024 * 1024 + 80 * (text.length + limits.maxTotalTokens);
  const token = '{"id":7,"text":"x","start":0,"stop":1},';
  const count = Math.ceil(size / token.length);
  const list = `[${token.repeat(count)}{"id":7,"text":"x","start":0,"stop":1}]`;
  return `{"tokenize_response":${list},"templated_text":"","tokens":${list}}`;
}

function wrongField(fault: string, ok: unknown): Response {
  if (Array.isArray(ok)) {
    return Response.json(fault === "invalid-tokens" ? [{ id: -1 }] : ok);
  }
  const body = isObject(ok) ? { ...ok } : {};
  if (fault === "invalid-tokens" && "tokenize_response" in body) {
    body.tokenize_response = [{ id: "7" }];
  }
  if (fault === "invalid-info" && "max_total_tokens" in body) {
    body.max_total_tokens = 0;
  }
  return Response.json(body);
}
