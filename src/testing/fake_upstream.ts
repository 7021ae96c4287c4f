/**
 * A fake OpenAI-compatible vLLM upstream for tests, benchmarks and demos:
 * chat completions, completions and Responses (plain or streamed, with
 * `usage`), `/tokenize`, `/detokenize`, `/v1/models`, `/version` and
 * `/health`, with vLLM's length checks and the failures a real server or
 * network shows. It counts by a rule, not with a tokenizer: its counts are
 * the fake's own, the same at `/tokenize` and in `usage` unless
 * `servedPromptTokens` makes the chat prompt another one.
 *
 * @module
 */

import {
  type FakeServerRequest,
  handlerAndFetch,
  readRequest,
  released,
  serveOnLocalPort,
} from "./server_kit.ts";
import {
  createFakeVllmTokenizerHandler,
  type FakeVllmTokenizerHandler,
} from "./fake_vllm_server.ts";
import {
  defaultReply,
  deliver,
  type GenerationKind,
  type JsonBody,
  plan,
  type Planner,
  timerSleep,
  upstreamError,
} from "./upstream_sse.ts";

/**
 * How the fake's generation endpoints fail. `"none"` answers normally;
 * `"http-500"` and `"http-503"` answer OpenAI-shaped errors; `"cut"` sends
 * part of the body and then fails the read; `"stall"` holds the response
 * until the fake is released or disposed (through the handler's `fetch`, also
 * until the request aborts); `"delay"` answers normally after `delayMs`;
 * `"non-json"` answers 200 with an HTML page.
 */
export type FakeUpstreamFault =
  | "none"
  | "http-500"
  | "http-503"
  | "cut"
  | "stall"
  | "delay"
  | "non-json";

const FAULTS: ReadonlySet<string> = new Set<FakeUpstreamFault>([
  "none",
  "http-500",
  "http-503",
  "cut",
  "stall",
  "delay",
  "non-json",
]);

/**
 * A seeded mix of faults for load tests: each generation request, in arrival
 * order, draws its fault from a deterministic generator (mulberry32), so
 * the same seed and the same request order give the same faults.
 */
export interface FakeUpstreamFaultMix {
  /** The seed of the generator; setting the mix again restarts it. */
  readonly seed: number;
  /**
   * The share of requests that answer `"http-500"` or `"http-503"` (half each).
   *
   * @default {0}
   */
  readonly errorFraction?: number;
  /**
   * The share of requests that are `"cut"`.
   *
   * @default {0}
   */
  readonly cutFraction?: number;
  /**
   * The share of requests that are `"delay"`ed, by a time within `delayMs`.
   *
   * @default {0}
   */
  readonly delayFraction?: number;
  /**
   * The smallest and largest delay, in whole milliseconds.
   *
   * @default {[0, 0]}
   */
  readonly delayMs?: readonly [number, number];
}

/** One request the fake upstream received, with the fault applied to it. */
export interface FakeUpstreamRequest extends FakeServerRequest {
  /** The fault applied to it; always `"none"` outside the generation endpoints. */
  readonly fault: FakeUpstreamFault;
}

/** Options for {@linkcode createFakeUpstreamHandler} and {@linkcode serveFakeUpstream}. */
export interface FakeUpstreamOptions {
  /**
   * The model `/v1/models` lists, and that answers name when a request names none.
   *
   * @default {"fake-model"}
   */
  readonly model?: string;
  /**
   * The `max_model_len` the fake reports and enforces.
   *
   * @default {65536}
   */
  readonly maxModelLen?: number;
  /**
   * Counts a `/tokenize` body; `usage` counts each prompt through `/tokenize`'s
   * chat form (`model`, `messages`, `tools`, `add_generation_prompt`, ...) or
   * text form (`prompt`), so the two agree unless `servedPromptTokens` says otherwise.
   *
   * @default {`Math.ceil(text length / 4)`} as {@linkcode createFakeVllmTokenizerHandler} counts
   */
  readonly countTokens?: (body: { readonly [key: string]: unknown }) => number;
  /**
   * The prompt tokens the generation routes report in `usage` (and hold to
   * `max_model_len`), from `/tokenize`'s count of the same prompt and its
   * `/tokenize` form: a server whose chat endpoint builds another prompt than
   * `/tokenize` renders, as vLLM does for gpt-oss (Harmony).
   *
   * @default {`/tokenize`'s count}
   */
  readonly servedPromptTokens?: (
    tokenized: number,
    form: { readonly [key: string]: unknown },
  ) => number;
  /**
   * Writes the assistant's reply to a generation request body.
   *
   * @default {"Noted: <n> messages."} (`<n> input items` for Responses, `<n> characters` for completions)
   */
  readonly reply?: (body: { readonly [key: string]: unknown }) => string;
  /**
   * The fault to start with; change it later through `fault`.
   *
   * @default {"none"}
   */
  readonly fault?: FakeUpstreamFault | FakeUpstreamFaultMix;
  /**
   * How long the `"delay"` fault holds each response, in milliseconds.
   *
   * @default {1000}
   */
  readonly delayMs?: number;
  /**
   * The pause between streamed chunks, in milliseconds; no timer runs at 0.
   *
   * @default {0}
   */
  readonly chunkDelayMs?: number;
  /**
   * Waits for delays: resolves after `ms`, or early once `signal` aborts.
   * Inject one to fake time.
   *
   * @default {a `setTimeout` cleared on abort}
   */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * Releases held and delayed requests and ends streams in progress, once
   * aborted. A served fake aborts it when disposed.
   *
   * @default {undefined} `handler` holds `"stall"`ed requests for good
   */
  readonly signal?: AbortSignal;
  /**
   * Whether `requests` keeps every request received. A fake that runs for
   * long (the `incontext demo-upstream` command) turns it off, so that its
   * memory does not grow with each request; `requests` then stays empty.
   *
   * @default {true}
   */
  readonly recordRequests?: boolean;
  /**
   * Every how many user turns a chat request that offers `tools` is answered
   * with a tool call: a request that ends with the N-th, 2N-th, ... user
   * message calls the first tool it offers, with arguments `{}`
   * (`finish_reason: "tool_calls"`, streamed as vLLM streams calls). A
   * request that ends with a tool's result is answered with text, so agent
   * loops end.
   *
   * @default {undefined} never a tool call
   */
  readonly toolCallEvery?: number;
  /**
   * The release `GET /version` reports; `null` answers that route 404, as a
   * server without it would.
   *
   * @default {"0.20.0"} the newest release whose rules incontext knows
   */
  readonly version?: string | null;
}

/** A fake upstream as a runtime-neutral request handler. */
export interface FakeUpstreamHandler {
  /** Answers one request as vLLM's OpenAI server would, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`, for tests without a network. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeUpstreamRequest[];
  /** The current fault or mix; setting it affects the requests that arrive next. */
  fault: FakeUpstreamFault | FakeUpstreamFaultMix;
}

/** A fake upstream server on a free local port; dispose it to close it. */
export interface FakeUpstream extends AsyncDisposable {
  /** The server root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The OpenAI SDK base URL, `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  /** The vLLM tokenizer URL, `http://127.0.0.1:<port>/tokenize`. */
  readonly tokenizeUrl: string;
  /** Every request received, oldest first; clear it with `requests.length = 0`. */
  readonly requests: FakeUpstreamRequest[];
  /** The current fault or mix; setting it affects the requests that arrive next. */
  fault: FakeUpstreamFault | FakeUpstreamFaultMix;
}

/** The fault one request gets, with its delay. */
interface Applied {
  readonly fault: FakeUpstreamFault;
  readonly delayMs: number;
}

const NONE: Applied = { fault: "none", delayMs: 0 };

const GENERATION: ReadonlyMap<string, GenerationKind> = new Map([
  ["/v1/chat/completions", "chat"],
  ["/v1/completions", "text"],
  ["/v1/responses", "responses"],
]);

const PATHS: ReadonlySet<string> = new Set([
  ...GENERATION.keys(),
  "/tokenize",
  "/detokenize",
  "/v1/models",
  "/version",
  "/health",
]);

/**
 * Creates a fake OpenAI-compatible vLLM upstream as a request handler, usable
 * with any server (`Deno.serve`, Node's, a test's `fetch`).
 *
 * @param options The model, `max_model_len`, counting and reply rules, the
 * first fault, the pacing, and a signal that releases held requests.
 * @returns The handler, a `fetch` bound to it, the recorded requests and the fault.
 * @throws {RangeError} If an option is out of range or `fault` is unknown.
 *
 * @example Usage that agrees with /tokenize
 * ```ts
 * import { createFakeUpstreamHandler } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeUpstreamHandler({ maxModelLen: 4096 });
 * const post = (path: string, body: unknown) =>
 *   fake.fetch(`http://fake.test${path}`, { method: "POST", body: JSON.stringify(body) });
 * const messages = [{ role: "user", content: "Hello" }];
 * const chat = await (await post("/v1/chat/completions", { model: "m", messages })).json();
 * const tokenized = await (await post("/tokenize", { model: "m", messages })).json();
 * strictEqual(chat.choices[0].message.content, "Noted: 1 messages.");
 * strictEqual(chat.usage.prompt_tokens, tokenized.count);
 * ```
 */
export function createFakeUpstreamHandler(
  options: FakeUpstreamOptions = {},
): FakeUpstreamHandler {
  const settings = readSettings(options);
  const tokenizer = createFakeVllmTokenizerHandler({
    maxModelLen: settings.maxModelLen,
    ...(options.countTokens === undefined
      ? {}
      : { countTokens: options.countTokens }),
    ...(options.version === undefined ? {} : { version: options.version }),
  });
  const record = options.recordRequests ?? true;
  let fault = checkFault(options.fault ?? "none");
  let random = mulberry32(typeof fault === "string" ? 0 : fault.seed);
  const requests: FakeUpstreamRequest[] = [];
  const served = options.servedPromptTokens;
  const planner: Planner = {
    ...settings,
    count: served === undefined
      ? (form) => count(tokenizer, form)
      : async (form) => served(await count(tokenizer, form), form),
  };
  let serial = 0;

  function nextFault(): Applied {
    if (typeof fault === "string") {
      return { fault, delayMs: fault === "delay" ? settings.delayMs : 0 };
    }
    return drawFault(fault, random(), random());
  }

  async function respond(
    request: Request,
    hold: AbortSignal[],
  ): Promise<Response> {
    const received = await readRequest(request);
    const { path, body } = received;
    const kind = request.method === "POST" ? GENERATION.get(path) : undefined;
    const applied = kind === undefined ? NONE : nextFault();
    if (record) requests.push({ ...received, fault: applied.fault });
    if (kind !== undefined) {
      const early = await faulted(applied, hold, settings.sleep);
      if (early !== undefined) return early;
      const planned = await plan(kind, body, { planner, serial: ++serial });
      if (planned instanceof Response) return planned;
      return deliver(planned, body as JsonBody, {
        chunkDelayMs: settings.chunkDelayMs,
        cut: applied.fault === "cut",
        signal: AbortSignal.any(hold),
        sleep: settings.sleep,
      });
    }
    return await serveOther(received, { settings, tokenizer });
  }

  return {
    ...handlerAndFetch(respond, settings.signal),
    requests,
    get fault(): FakeUpstreamFault | FakeUpstreamFaultMix {
      return fault;
    },
    set fault(value: FakeUpstreamFault | FakeUpstreamFaultMix) {
      fault = checkFault(value);
      if (typeof fault !== "string") random = mulberry32(fault.seed);
    },
  };
}

/**
 * Serves a fake OpenAI-compatible vLLM upstream on `127.0.0.1`, on a port the
 * system picks. Needs Deno (`--allow-net=127.0.0.1`); elsewhere, serve
 * {@linkcode createFakeUpstreamHandler} with a server of your own.
 *
 * @param options The model, `max_model_len`, counting and reply rules, the
 * first fault, the pacing, and a signal that releases held requests.
 * @returns The running fake; dispose it to release held requests, end
 * streams in progress and close the server.
 * @throws {RangeError} If an option is out of range or `fault` is unknown.
 * @throws {TypeError} If the runtime is not Deno.
 *
 * @example Streaming with usage through the OpenAI SDK
 * ```ts
 * import { serveFakeUpstream } from "@incontext/incontext/testing";
 * import OpenAI from "openai";
 * import { ok, strictEqual } from "node:assert/strict";
 *
 * await using upstream = await serveFakeUpstream({ maxModelLen: 8192 });
 * const client = new OpenAI({ baseURL: upstream.baseUrl, apiKey: "sk-test", maxRetries: 0 });
 * const stream = await client.chat.completions.create({
 *   model: "m",
 *   messages: [{ role: "user", content: "Hi" }],
 *   stream: true,
 *   stream_options: { include_usage: true },
 * });
 * let text = "";
 * let promptTokens = 0;
 * for await (const chunk of stream) {
 *   text += chunk.choices[0]?.delta.content ?? "";
 *   promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
 * }
 * strictEqual(text, "Noted: 1 messages.");
 * ok(promptTokens > 0);
 * ```
 */
export async function serveFakeUpstream(
  options: FakeUpstreamOptions = {},
): Promise<FakeUpstream> {
  let fake: FakeUpstreamHandler | undefined;
  const served = await serveOnLocalPort((signal) => {
    fake = createFakeUpstreamHandler({ ...options, signal });
    return fake.handler;
  }, {
    what: "the fake upstream",
    signal: options.signal,
    instead: "createFakeUpstreamHandler()",
  });
  const created = fake as FakeUpstreamHandler;
  const { url } = served;
  return {
    url,
    baseUrl: `${url}/v1`,
    tokenizeUrl: `${url}/tokenize`,
    requests: created.requests,
    get fault(): FakeUpstreamFault | FakeUpstreamFaultMix {
      return created.fault;
    },
    set fault(value: FakeUpstreamFault | FakeUpstreamFaultMix) {
      created.fault = value;
    },
    // Held requests and streams end first: close() releases them.
    [Symbol.asyncDispose]: () => served.close(),
  };
}

/** The options, validated, with their defaults. */
interface Settings {
  readonly toolCallEvery: number | undefined;
  readonly model: string;
  readonly maxModelLen: number;
  readonly reply: (body: JsonBody) => string;
  readonly delayMs: number;
  readonly chunkDelayMs: number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly signal: AbortSignal | undefined;
}

function readSettings(options: FakeUpstreamOptions): Settings {
  const {
    model = "fake-model",
    maxModelLen = 65536,
    reply = defaultReply,
    delayMs = 1000,
    chunkDelayMs = 0,
    sleep = timerSleep,
    signal,
    toolCallEvery,
  } = options;
  if (
    toolCallEvery !== undefined &&
    !(Number.isSafeInteger(toolCallEvery) && toolCallEvery >= 1)
  ) {
    throw new RangeError(
      `Cannot create the fake upstream as 'toolCallEvery' must be a positive integer: current value is ${toolCallEvery}`,
    );
  }
  if (typeof model !== "string" || model === "") {
    throw new RangeError(
      `Cannot create the fake upstream as 'model' must be a non-empty string: current value is ${model}`,
    );
  }
  if (!Number.isSafeInteger(maxModelLen) || maxModelLen < 1) {
    throw new RangeError(
      `Cannot create the fake upstream as 'maxModelLen' must be a positive integer: current value is ${maxModelLen}`,
    );
  }
  for (
    const [name, value] of [["delayMs", delayMs], [
      "chunkDelayMs",
      chunkDelayMs,
    ]] as const
  ) {
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(
        `Cannot create the fake upstream as '${name}' must be a non-negative number: current value is ${value}`,
      );
    }
  }
  return {
    toolCallEvery,
    model,
    maxModelLen,
    reply,
    delayMs,
    chunkDelayMs,
    sleep,
    signal,
  };
}

function checkFault(
  value: FakeUpstreamFault | FakeUpstreamFaultMix,
): FakeUpstreamFault | FakeUpstreamFaultMix {
  if (typeof value === "string") {
    if (FAULTS.has(value)) return value;
    throw new RangeError(
      `Cannot set the fake upstream fault as it must be one of ${
        [...FAULTS].join(", ")
      }, or a mix`,
    );
  }
  const { seed, errorFraction = 0, cutFraction = 0, delayFraction = 0 } = value;
  const [min, max] = value.delayMs ?? [0, 0];
  if (!Number.isSafeInteger(seed)) {
    throw new RangeError(
      `Cannot set the fake upstream fault mix as 'seed' must be an integer: current value is ${seed}`,
    );
  }
  const fractions = [errorFraction, cutFraction, delayFraction];
  if (
    fractions.some((f) => !(f >= 0 && f <= 1)) ||
    errorFraction + cutFraction + delayFraction > 1
  ) {
    throw new RangeError(
      `Cannot set the fake upstream fault mix as the fractions must lie in [0, 1] and sum to at most 1: current values are ${
        fractions.join(", ")
      }`,
    );
  }
  if (
    !Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 ||
    min > max
  ) {
    throw new RangeError(
      `Cannot set the fake upstream fault mix as 'delayMs' must be [min, max] whole milliseconds with 0 <= min <= max: current value is [${min}, ${max}]`,
    );
  }
  return value;
}

/** The mulberry32 generator: small, fast, and the same on every runtime. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Maps two uniform draws in [0, 1) to a fault, errors first, then cuts, then delays. */
function drawFault(
  mix: FakeUpstreamFaultMix,
  pick: number,
  spread: number,
): Applied {
  const { errorFraction = 0, cutFraction = 0, delayFraction = 0 } = mix;
  const [min, max] = mix.delayMs ?? [0, 0];
  if (pick < errorFraction) {
    return { fault: spread < 0.5 ? "http-500" : "http-503", delayMs: 0 };
  }
  if (pick < errorFraction + cutFraction) return { fault: "cut", delayMs: 0 };
  if (pick < errorFraction + cutFraction + delayFraction) {
    return {
      fault: "delay",
      delayMs: min + Math.floor(spread * (max - min + 1)),
    };
  }
  return NONE;
}

/** The response a fault answers before any work, after waiting for a delay. */
async function faulted(
  applied: Applied,
  hold: AbortSignal[],
  sleep: Settings["sleep"],
): Promise<Response | undefined> {
  switch (applied.fault) {
    case "http-500":
      return upstreamError(500, {
        type: "InternalServerError",
        message: "The fake upstream failed on purpose",
      });
    case "http-503":
      return upstreamError(503, {
        type: "ServiceUnavailableError",
        message: "The fake upstream is unavailable on purpose",
      });
    case "non-json":
      return new Response(
        "<html><body><h1>Welcome to nginx!</h1></body></html>",
        {
          headers: { "content-type": "text/html" },
        },
      );
    case "stall":
      await released(hold);
      return closedResponse();
    case "delay": {
      const signal = AbortSignal.any(hold);
      if (applied.delayMs > 0) await sleep(applied.delayMs, signal);
      return signal.aborted ? closedResponse() : undefined;
    }
    default:
      return undefined;
  }
}

function closedResponse(): Response {
  return upstreamError(503, {
    type: "ServiceUnavailableError",
    message: "The fake upstream was closed",
  });
}

/** The non-generation routes: /tokenize, /detokenize, /v1/models, /version, /health, and 404/405. */
async function serveOther(
  { method, path, text, body }: FakeServerRequest,
  { settings, tokenizer }: {
    readonly settings: Settings;
    /** Answers `/tokenize`, and counts what the generation routes count. */
    readonly tokenizer: FakeVllmTokenizerHandler;
  },
): Promise<Response> {
  if (method === "POST" && path === "/tokenize") {
    return await tokenize(tokenizer, text);
  }
  if (method === "POST" && path === "/detokenize") return detokenize(body);
  if (method === "GET" && path === "/version") {
    return await tokenizer.handler(
      new Request("http://fake-upstream.invalid/version"),
    ).finally(() => tokenizer.requests.length = 0);
  }
  if (method === "GET" && path === "/health") return new Response(null);
  if (method === "GET" && path === "/v1/models") {
    const { model, maxModelLen } = settings;
    return Response.json({
      object: "list",
      data: [{
        id: model,
        object: "model",
        created: Math.floor(Date.now() / 1000),
        owned_by: "vllm",
        root: model,
        parent: null,
        max_model_len: maxModelLen,
        permission: [],
      }],
    });
  }
  // FastAPI's shape, as vLLM answers unknown routes and methods.
  return PATHS.has(path)
    ? Response.json({ detail: "Method Not Allowed" }, { status: 405 })
    : Response.json({ detail: "Not Found" }, { status: 404 });
}

/** The largest token id vLLM's `DetokenizeRequest` accepts (`le=2**63 - 1`). */
const MAX_TOKEN_ID = 2n ** 63n - 1n;

/**
 * vLLM's `POST /detokenize` in shape: `{"tokens": [ids]}` answers
 * `{"prompt": text}`. The fake has no vocabulary, so each id reads `<id>`;
 * a body vLLM's validation refuses answers 400.
 */
function detokenize(body: unknown): Response {
  const tokens = typeof body === "object" && body !== null &&
      !Array.isArray(body)
    ? (body as JsonBody).tokens
    : undefined;
  const valid = Array.isArray(tokens) &&
    tokens.every((id) =>
      Number.isInteger(id) && id >= 0 && BigInt(id) <= MAX_TOKEN_ID
    );
  if (!valid) {
    return upstreamError(400, {
      type: "BadRequestError",
      message: "'tokens' must be a list of token ids (integers >= 0)",
    });
  }
  return Response.json({
    prompt: (tokens as number[]).map((id) => `<${id}>`).join(""),
  });
}

/** Counts a `/tokenize` body with the tokenizer that also answers `/tokenize`. */
async function count(
  tokenizer: FakeVllmTokenizerHandler,
  form: JsonBody,
): Promise<number> {
  const response = await tokenize(tokenizer, JSON.stringify(form));
  const { count: counted } = await response.json();
  if (!response.ok || typeof counted !== "number") {
    throw new TypeError(
      `Cannot count the prompt as /tokenize answered ${response.status}`,
    );
  }
  return counted;
}

function tokenize(
  tokenizer: FakeVllmTokenizerHandler,
  text: string,
): Promise<Response> {
  const request = new Request("http://fake-upstream.invalid/tokenize", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: text,
  });
  // The fake's own record is the one callers read.
  return tokenizer.handler(request).finally(() =>
    tokenizer.requests.length = 0
  );
}
