// The `llamacpp` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CapReading,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type ReadCapsOptions,
} from "../../core/backend.ts";
import type { BackendConfig } from "../_shared/config.ts";
import { CountError } from "../../core/errors.ts";
import { isJsonObject } from "../../core/request.ts";
import { responsesToChat } from "../_shared/responses.ts";
import { minDefined } from "../../core/caps.ts";
import type { Deadline } from "../../_internal/deadline.ts";
import {
  checkServedContext,
  payloadJson,
  SMALL_ANSWER_BYTES,
} from "../_shared/http_count.ts";
import { HttpCounter } from "../_shared/http_counter.ts";
import { countGuard } from "../_shared/count_guard.ts";
import {
  type BundledBackend,
  httpOptionsFromConfig,
  requireConfig,
} from "../_shared/from_config.ts";
import { createServerInfo, type ServerInfo } from "../_shared/server_info.ts";
import { rejectingFetch } from "../_shared/status_fetch.ts";
import {
  applyTemplatePayload,
  completionPrompt,
  llamaCppCap,
  llamacppTokenizeBody,
  nPredictCap,
  withoutNPredict,
} from "./payload.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the llama.cpp backend";
const LABEL = "llama.cpp";
/** llama.cpp's own context length (per slot), compared with the configured one. */
const SERVED_CONTEXT = "llama.cpp n_ctx";
const guardedCount = countGuard({
  what: WHAT,
  failure: `${LABEL} count failed`,
  logger: getLogger(["incontext", "llamacpp"]),
});

/** Options for {@linkcode LlamaCppBackend}. */
export interface LlamaCppBackendOptions extends HttpCountOptions {
  /**
   * The server's base URL, such as `http://127.0.0.1:8080`: the paths
   * `/apply-template`, `/tokenize` and `/props` are appended (a query string is kept).
   */
  readonly url: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` (llama-server's `--api-key`).
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
}

/**
 * Counts the exact prompt tokens of a request with a llama.cpp server, and
 * reads output caps as llama.cpp does.
 *
 * A chat request is rendered with `POST /apply-template` (the chat
 * endpoint's own parser: a request it rejects with HTTP 400 fails with a
 * `TemplateRejectedError`, so budget() leaves it unchanged) and the prompt is
 * tokenized with `POST /tokenize` (`add_special` and `parse_special`, as
 * the chat endpoint does); a completion prompt is tokenized directly; a
 * Responses request is converted to its chat form first. Images and audio
 * cannot be counted this way and fail the count, so budget() estimates.
 *
 * The context per slot (`GET /props`, `default_generation_settings.n_ctx`,
 * read once per instance) must equal the configured context length.
 * llama.cpp does not check `max_tokens` against the context, so the output
 * limit is `n_ctx - P` ({@linkcode LlamaCppBackend.outputBudgetLimit}).
 *
 * @example Counting, and reading caps as llama.cpp does
 * ```ts
 * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
 * import { createFakeLlamaCppHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual, strictEqual } from "node:assert/strict";
 *
 * const fake = createFakeLlamaCppHandler({ nCtx: 4096 });
 * const backend = new LlamaCppBackend({ url: "http://llama.test", fetch: fake.fetch, cache: null });
 * await backend.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 4096 });
 * deepStrictEqual(fake.requests.map((r) => r.path), ["/props", "/apply-template", "/tokenize"]);
 * const request = { messages: [], max_completion_tokens: 900, n_predict: 500 };
 * deepStrictEqual(backend.readCaps(request, { kind: "chat", defaultField: "max_tokens" }), { value: 500, field: "max_tokens" });
 * strictEqual(backend.writeCap(request, "max_tokens", 400).n_predict, undefined);
 * ```
 */
export class LlamaCppBackend extends Backend {
  /** The label of llama.cpp counts: `"llamacpp-tokenize"`. */
  override readonly source: string = "llamacpp-tokenize";
  /** The server's own context length, compared with the configured one on every count. */
  override get servedContext(): string {
    return SERVED_CONTEXT;
  }
  readonly #http: HttpCounter;
  readonly #props: ServerInfo<number>;

  /**
   * Creates a llama.cpp backend. Nothing starts until the first count.
   *
   * @param options The base URL and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `userAgent` or `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: LlamaCppBackendOptions) {
    super();
    this.#http = new HttpCounter({ what: WHAT, label: LABEL }, options);
    this.#props = createServerInfo(
      (signal) => this.#readContext(signal),
      this.#http.timeoutMs,
    );
  }

  /**
   * Counts the prompt tokens of `request`, through the count cache.
   *
   * @param request A chat, completions or Responses request body, never mutated.
   * @param options The served context length, which must equal the server's
   * `n_ctx` per slot, the request's kind, and an abort signal.
   * @returns The exact prompt token count, BOS included.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If `/apply-template` rejects the request (HTTP 400).
   * @throws {CountError} On every other failure: a request it cannot count
   * (media, a prompt that is not a string), an `n_ctx` that differs, a
   * network error, any other non-2xx status (429 and 5xx included, with no
   * retry), a timeout, an abort, or an invalid or oversized answer.
   *
   * @example A context length that is not the server's
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { createFakeLlamaCppHandler } from "@incontext/incontext/testing";
   * import { rejects } from "node:assert/strict";
   *
   * const fake = createFakeLlamaCppHandler({ nCtx: 4096 });
   * const backend = new LlamaCppBackend({ url: "http://llama.test", fetch: fake.fetch, cache: null });
   * await rejects(backend.count({ messages: [] }, { contextLength: 8192 }), CountError);
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    return await guardedCount(
      { source: this.source, request, options },
      (request, contextLength) => {
        const kind = options.kind ?? "chat";
        const completion = kind === "completion";
        const payload = completion
          ? llamacppTokenizeBody(completionPrompt(request))
          : applyTemplatePayload(
            kind === "responses" ? responsesToChat(request) : request,
          );
        const json = payloadJson(payload);
        return this.#http.count(
          {
            key: `${this.source} ${this.#http.url}`,
            contextLength,
            json,
            signal: options.signal,
            check: async (signal) =>
              checkServedContext(
                SERVED_CONTEXT,
                await this.#props.get(signal),
                contextLength,
              ),
          },
          (deadline) =>
            completion
              ? this.#tokenize(json, payload.content as string, deadline)
              : this.#render(json, contextLength, deadline),
        );
      },
    );
  }

  /**
   * Forgets cached counts (with the default, the process-wide cache's) and
   * the server's `n_ctx`, which the next count reads again.
   *
   * @returns A promise that settles once the clear has taken effect.
   * @throws {CountError} If the cache is disposed.
   *
   * @example Reading /props again after a clear
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { createFakeLlamaCppHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeLlamaCppHandler({ nCtx: 4096 });
   * const backend = new LlamaCppBackend({ url: "http://llama.test", fetch: fake.fetch, cache: null });
   * await backend.count({ messages: [] }, { contextLength: 4096 });
   * await backend.clearCache();
   * await backend.count({ messages: [] }, { contextLength: 4096 });
   * strictEqual(fake.requests.filter((r) => r.path === "/props").length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    this.#props.clear();
    return this.#http.clearCache();
  }

  /**
   * The field llama.cpp reads: `max_output_tokens` for Responses requests,
   * else `max_tokens` (its chat and completion endpoints read `n_predict`
   * or `max_tokens`, never `max_completion_tokens`).
   *
   * @param _field The field incontext would write.
   * @param options The request's kind.
   * @returns The wire field.
   *
   * @example Mapping caps
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
   * strictEqual(backend.outputBudgetField("max_completion_tokens"), "max_tokens");
   * strictEqual(backend.outputBudgetField("max_tokens", { kind: "responses" }), "max_output_tokens");
   * ```
   */
  override outputBudgetField(
    _field: CapField,
    options: OutputFieldOptions = {},
  ): string {
    return options.kind === "responses" ? "max_output_tokens" : "max_tokens";
  }

  /**
   * Reads a cap as llama.cpp does (nlohmann's `get<int>`): numbers are
   * truncated, booleans are 0 or 1, strings are no cap.
   *
   * @param value A cap field's value.
   * @returns A positive integer, or `undefined`.
   *
   * @example Truncated numbers
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
   * strictEqual(backend.coerceOutputBudget(512.9), 512);
   * strictEqual(backend.coerceOutputBudget("512"), undefined);
   * ```
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return llamaCppCap(value);
  }

  /**
   * Reads the OpenAI cap aliases and llama.cpp's own `n_predict` (which
   * the server reads before `max_tokens`): the smallest one wins.
   *
   * @param request The request body.
   * @param options The request's kind and the default field.
   * @returns The smallest cap and the wire field.
   *
   * @example n_predict is a cap
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
   * deepStrictEqual(
   *   backend.readCaps({ messages: [], extra_body: { n_predict: 300 } }, { kind: "chat", defaultField: "max_tokens" }),
   *   { value: 300, field: "max_tokens" },
   * );
   * ```
   */
  override readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    // llama.cpp refuses no cap: a value it cannot read (0, -1, "512") is
    // none, and the budget applies.
    const cap = super.readCaps(request, options);
    const nPredict = nPredictCap(request, (v) => this.coerceOutputBudget(v));
    return { value: minDefined(cap.value, nPredict), field: cap.field };
  }

  /**
   * Writes the cap and removes every other cap, `n_predict` included (it
   * would win over `max_tokens`).
   *
   * @param request The request body, never changed.
   * @param field The wire field.
   * @param value The cap.
   * @returns The rewritten copy.
   *
   * @example One cap left
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
   * deepStrictEqual(
   *   backend.writeCap({ messages: [], n_predict: -1, max_completion_tokens: 9 }, "max_tokens", 7),
   *   { messages: [], max_tokens: 7 },
   * );
   * ```
   */
  override writeCap(
    request: JsonObject,
    field: string,
    value: number,
  ): JsonObject {
    return withoutNPredict(super.writeCap(request, field, value));
  }

  /**
   * The largest output that fits the slot after the prompt: `n_ctx - P`
   * (the configured context length, which the count checks against
   * `/props`). llama.cpp itself does not check `max_tokens`: it would stop
   * generating at the end of the context.
   *
   * @param _request The request body.
   * @param options The context length and the prompt's tokens.
   * @returns The limit, never below 0.
   *
   * @example The rest of the context
   * ```ts
   * import { LlamaCppBackend } from "@incontext/incontext/llamacpp";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new LlamaCppBackend({ url: "http://127.0.0.1:8080" });
   * strictEqual(backend.outputBudgetLimit({}, { contextLength: 8192, promptTokens: 1000 }), 7192);
   * ```
   */
  override outputBudgetLimit(
    _request: JsonObject,
    options: OutputLimitOptions,
  ): number {
    return Math.max(0, options.contextLength - (options.promptTokens ?? 0));
  }

  async #readContext(signal: AbortSignal): Promise<number> {
    const props = await this.#http.fetchJson({
      label: `${LABEL} /props`,
      url: this.#http.endpoint("/props"),
      signal,
      maxBytes: PROPS_BYTES,
    });
    const settings = props.default_generation_settings;
    const nCtx = isJsonObject(settings) ? settings.n_ctx : undefined;
    if (typeof nCtx !== "number" || !Number.isSafeInteger(nCtx) || nCtx < 1) {
      throw new CountError("llama.cpp /props returned an invalid n_ctx");
    }
    return nCtx;
  }

  async #render(
    json: string,
    contextLength: number,
    deadline: Deadline,
  ): Promise<number> {
    // The rendered prompt holds the request's text and the template's own:
    // a bound in proportion to both.
    const maxBytes = SMALL_ANSWER_BYTES + 4 * json.length + 64 * contextLength;
    const body = await this.#http.fetchJson({
      label: `${LABEL} /apply-template`,
      url: this.#http.endpoint("/apply-template"),
      body: json,
      signal: deadline.signal,
      maxBytes,
      adapt: (fetch) =>
        rejectingFetch(
          fetch,
          400,
          "llama.cpp /apply-template rejects this request (its chat endpoint would too)",
        ),
    });
    const { prompt } = body;
    if (typeof prompt !== "string") {
      throw new CountError(
        "llama.cpp /apply-template returned an invalid prompt",
      );
    }
    return this.#tokenize(
      payloadJson(llamacppTokenizeBody(prompt)),
      prompt,
      deadline,
    );
  }

  async #tokenize(
    json: string,
    prompt: string,
    deadline: Deadline,
  ): Promise<number> {
    // At most one token per UTF-8 byte (3 per UTF-16 unit), 8 bytes an id.
    const maxBytes = SMALL_ANSWER_BYTES + 24 * prompt.length;
    const body = await this.#http.fetchJson({
      label: `${LABEL} /tokenize`,
      url: this.#http.endpoint("/tokenize"),
      body: json,
      signal: deadline.signal,
      maxBytes,
    });
    const { tokens } = body;
    if (!Array.isArray(tokens) || !tokens.every(isTokenId)) {
      throw new CountError("llama.cpp /tokenize returned invalid tokens");
    }
    return tokens.length;
  }
}

/** `/props` lists settings and the template; 1 MiB is far beyond a real answer. */
const PROPS_BYTES = 1024 * 1024;

function isTokenId(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) &&
    value >= 0;
}

/**
 * Builds the `llamacpp` backend from configuration: `INCONTEXT_TOKENIZER_URL`
 * is the server's base URL, `INCONTEXT_TOKENIZER_API_KEY` its `--api-key`.
 *
 * @param config The loaded configuration.
 * @returns The backend, using the process-wide count cache.
 * @throws {ConfigError} If `INCONTEXT_TOKENIZER_URL` is missing.
 *
 * @example From configuration
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { llamaCppFromConfig } from "@incontext/incontext/llamacpp";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8080" });
 * strictEqual(llamaCppFromConfig(config).source, "llamacpp-tokenize");
 * ```
 */
export function llamaCppFromConfig(config: BackendConfig): LlamaCppBackend {
  const { tokenizerUrl } = requireConfig(LLAMACPP, config);
  return new LlamaCppBackend({
    ...httpOptionsFromConfig(config, config.tokenizerApiKey),
    url: tokenizerUrl,
  });
}

/** The `llamacpp` backend as the bundled registry plugs it in. */
export const LLAMACPP: BundledBackend<"tokenizerUrl"> = {
  name: "llamacpp",
  requires: ["tokenizerUrl"],
  factory: llamaCppFromConfig,
};
