// The `tgi` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
} from "../../core/backend.ts";
import type { BackendConfig } from "../_shared/config.ts";
import { CountError } from "../../core/errors.ts";
import { responsesToChat } from "../_shared/responses.ts";
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
import { framingFetch, rejectingFetch } from "../_shared/status_fetch.ts";
import {
  chatTokenizePayload,
  isTokenList,
  readLimits,
  tgiCap,
  type TgiLimits,
  tgiTokenizeBody,
} from "./payload.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the TGI backend";
const LABEL = "TGI";
/** TGI's own context length, compared with the configured one. */
const SERVED_CONTEXT = "TGI max_total_tokens";
const guardedCount = countGuard({
  what: WHAT,
  failure: `${LABEL} count failed`,
  logger: getLogger(["incontext", "tgi"]),
});

/** Options for {@linkcode TgiBackend}. */
export interface TgiBackendOptions extends HttpCountOptions {
  /**
   * The server's base URL, such as `http://127.0.0.1:3000`: the paths
   * `/chat_tokenize`, `/tokenize` and `/info` are appended (a query string is kept).
   */
  readonly url: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` (TGI's `--api-key`).
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
}

/**
 * Counts the exact prompt tokens of a request with TGI, and reads output
 * caps as TGI does.
 *
 * A chat request goes to `POST /chat_tokenize` (the count is the length of
 * `tokenize_response`); a completion prompt to `POST /tokenize`; a
 * Responses request is converted to its chat form first. A request TGI
 * answers with HTTP 422 (its chat endpoint deserializes and validates the
 * same way) fails with a `TemplateRejectedError`, so budget() leaves it
 * unchanged.
 *
 * TGI accepts `prompt + max_new_tokens <= max_total_tokens` and prompts of
 * at most `max_input_tokens` (`GET /info`, read once per instance). The
 * configured context length must equal `max_total_tokens`, so the window
 * bound `W - P` keeps every budget within TGI's total. A prompt over
 * `max_input_tokens` is rejected by TGI whatever the budget, so no budget
 * may be written for it: its output limit is 0, and budget() asks the host
 * to compress whatever the window.
 *
 * @example Counting and reading limits
 * ```ts
 * import { TgiBackend } from "@incontext/incontext/tgi";
 * import { createFakeTgiHandler } from "@incontext/incontext/testing";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const fake = createFakeTgiHandler({ maxTotalTokens: 4096 });
 * const backend = new TgiBackend({ url: "http://tgi.test", fetch: fake.fetch, cache: null });
 * await backend.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 4096 });
 * deepStrictEqual(fake.requests.map((r) => r.path), ["/info", "/chat_tokenize"]);
 * ```
 */
export class TgiBackend extends Backend {
  /** The label of TGI counts: `"tgi-chat-tokenize"`. */
  override readonly source: string = "tgi-chat-tokenize";
  /** The server's own context length, compared with the configured one on every count. */
  override get servedContext(): string {
    return SERVED_CONTEXT;
  }
  readonly #http: HttpCounter;
  readonly #info: ServerInfo<TgiLimits>;

  /**
   * Creates a TGI backend. Nothing starts until the first count.
   *
   * @param options The base URL and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `userAgent` or `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: TgiBackendOptions) {
    super();
    this.#http = new HttpCounter({ what: WHAT, label: LABEL }, options);
    this.#info = createServerInfo(
      (signal) => this.#readLimits(signal),
      this.#http.timeoutMs,
    );
  }

  /**
   * Counts the prompt tokens of `request`, through the count cache.
   *
   * @param request A chat, completions or Responses request body, never mutated.
   * @param options The served context length, which must equal TGI's
   * `max_total_tokens`, the request's kind, and an abort signal.
   * @returns The exact prompt token count.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If TGI rejects the request (HTTP 422).
   * @throws {CountError} On every other failure: a request it cannot count,
   * a `max_total_tokens` that differs, a network error, any other non-2xx
   * status (429 and 5xx included, with no retry), a timeout, an abort, or an
   * invalid or oversized answer.
   *
   * @example A context length that is not TGI's max_total_tokens
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { TgiBackend } from "@incontext/incontext/tgi";
   * import { createFakeTgiHandler } from "@incontext/incontext/testing";
   * import { rejects } from "node:assert/strict";
   *
   * const fake = createFakeTgiHandler({ maxTotalTokens: 4096 });
   * const backend = new TgiBackend({ url: "http://tgi.test", fetch: fake.fetch, cache: null });
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
        const path = kind === "completion" ? "/tokenize" : "/chat_tokenize";
        const json = payloadJson(
          kind === "completion"
            ? tgiTokenizeBody(request)
            : chatTokenizePayload(
              kind === "responses" ? responsesToChat(request) : request,
            ),
        );
        return this.#http.count(
          {
            key: `${this.source} ${this.#http.url}`,
            contextLength,
            json,
            signal: options.signal,
            check: async (signal) =>
              checkServedContext(
                SERVED_CONTEXT,
                (await this.#info.get(signal)).maxTotalTokens,
                contextLength,
              ),
          },
          (deadline) => this.#tokenize(path, { json, contextLength, deadline }),
        );
      },
    );
  }

  /**
   * Forgets cached counts (with the default, the process-wide cache's) and
   * TGI's limits, which the next count reads again.
   *
   * @returns A promise that settles once the clear has taken effect.
   * @throws {CountError} If the cache is disposed.
   *
   * @example Reading /info again after a clear
   * ```ts
   * import { TgiBackend } from "@incontext/incontext/tgi";
   * import { createFakeTgiHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeTgiHandler({ maxTotalTokens: 4096 });
   * const backend = new TgiBackend({ url: "http://tgi.test", fetch: fake.fetch, cache: null });
   * await backend.count({ messages: [] }, { contextLength: 4096 });
   * await backend.clearCache();
   * await backend.count({ messages: [] }, { contextLength: 4096 });
   * strictEqual(fake.requests.filter((r) => r.path === "/info").length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    this.#info.clear();
    return this.#http.clearCache();
  }

  /**
   * The field TGI reads: `max_tokens` (its chat and completions endpoints
   * read no other), or `max_output_tokens` for Responses requests.
   *
   * @param _field The field incontext would write.
   * @param options The request's kind.
   * @returns The wire field.
   *
   * @example Mapping caps
   * ```ts
   * import { TgiBackend } from "@incontext/incontext/tgi";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new TgiBackend({ url: "http://127.0.0.1:3000" });
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
   * Reads a cap as TGI's serde does (`u32`): integers only; anything else
   * makes TGI reject the request, so it is no cap.
   *
   * @param value A cap field's value.
   * @returns A positive integer, or `undefined`.
   *
   * @example Strict integers
   * ```ts
   * import { TgiBackend } from "@incontext/incontext/tgi";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new TgiBackend({ url: "http://127.0.0.1:3000" });
   * strictEqual(backend.coerceOutputBudget(512), 512);
   * strictEqual(backend.coerceOutputBudget("512"), undefined);
   * strictEqual(backend.coerceOutputBudget(2 ** 32), undefined);
   * ```
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return tgiCap(value);
  }

  /**
   * The largest `max_tokens` TGI accepts after a prompt of `promptTokens`:
   * `max_total_tokens - P` (the configured context length, which the count
   * checks against `/info`), and 0 for a prompt over `max_input_tokens`,
   * which TGI rejects whatever the budget, so that budget() asks the host to
   * compress instead of writing a budget TGI would refuse.
   *
   * @param _request The request body.
   * @param options The context length and the prompt's tokens.
   * @returns The limit, never below 0.
   *
   * @example Limits after a count
   * ```ts
   * import { TgiBackend } from "@incontext/incontext/tgi";
   * import { createFakeTgiHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeTgiHandler({ maxTotalTokens: 4096, maxInputTokens: 3000 });
   * const backend = new TgiBackend({ url: "http://tgi.test", fetch: fake.fetch, cache: null });
   * await backend.count({ messages: [] }, { contextLength: 4096 }); // reads /info
   * strictEqual(backend.outputBudgetLimit({}, { contextLength: 4096, promptTokens: 1000 }), 3096);
   * strictEqual(backend.outputBudgetLimit({}, { contextLength: 4096, promptTokens: 3001 }), 0);
   * ```
   */
  override outputBudgetLimit(
    _request: JsonObject,
    options: OutputLimitOptions,
  ): number {
    const prompt = options.promptTokens ?? 0;
    const limits = this.#info.peek();
    if (limits !== undefined && prompt > limits.maxInputTokens) return 0;
    return Math.max(0, options.contextLength - prompt);
  }

  async #readLimits(signal: AbortSignal): Promise<TgiLimits> {
    const info = await this.#http.fetchJson({
      label: `${LABEL} /info`,
      url: this.#http.endpoint("/info"),
      signal,
      maxBytes: SMALL_ANSWER_BYTES,
    });
    return readLimits(info);
  }

  async #tokenize(
    path: "/chat_tokenize" | "/tokenize",
    { json, contextLength, deadline }: {
      readonly json: string;
      readonly contextLength: number;
      readonly deadline: Deadline;
    },
  ): Promise<number> {
    const label = `${LABEL} ${path}`;
    const body = await this.#http.fetchJson({
      label,
      url: this.#http.endpoint(path),
      body: json,
      signal: deadline.signal,
      // About 50 bytes a token ({id, text, start, stop}), at most one token a
      // character of the rendered text, which is the request's plus the template's.
      maxBytes: SMALL_ANSWER_BYTES + 72 * (json.length + contextLength),
      adapt: (fetch) => {
        const rejecting = rejectingFetch(
          fetch,
          422,
          `${label} rejects this request (its generation endpoint would too)`,
        );
        // `/tokenize` answers a bare array: framed as {"tokens": [...]} to read it.
        return path === "/tokenize"
          ? framingFetch(rejecting, "tokens")
          : rejecting;
      },
    });
    const tokens = path === "/tokenize" ? body.tokens : body.tokenize_response;
    if (!isTokenList(tokens)) {
      throw new CountError(`${label} returned invalid tokens`);
    }
    return tokens.length;
  }
}

/**
 * Builds the `tgi` backend from configuration: `INCONTEXT_TOKENIZER_URL` is
 * the server's base URL, `INCONTEXT_TOKENIZER_API_KEY` its `--api-key`.
 *
 * @param config The loaded configuration.
 * @returns The backend, using the process-wide count cache.
 * @throws {ConfigError} If `INCONTEXT_TOKENIZER_URL` is missing.
 *
 * @example From configuration
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { tgiFromConfig } from "@incontext/incontext/tgi";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:3000" });
 * strictEqual(tgiFromConfig(config).source, "tgi-chat-tokenize");
 * ```
 */
export function tgiFromConfig(config: BackendConfig): TgiBackend {
  const { tokenizerUrl } = requireConfig(TGI, config);
  return new TgiBackend({
    ...httpOptionsFromConfig(config, config.tokenizerApiKey),
    url: tokenizerUrl,
  });
}

/** The `tgi` backend as the bundled registry plugs it in. */
export const TGI: BundledBackend<"tokenizerUrl"> = {
  name: "tgi",
  requires: ["tokenizerUrl"],
  factory: tgiFromConfig,
};
