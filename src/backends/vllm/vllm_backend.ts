// The `vllm` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountCheck,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
} from "../../core/backend.ts";
import { laxPositiveInteger } from "@incontext/engine/vllm";
import {
  dependsOnRelease,
  maxTokenizeResponseBytes,
  vllmOutputField,
  vllmOutputLimit,
} from "@incontext/engine/vllm";
import {
  mistralChatBody,
  NEWEST_VLLM_RELEASE,
  OLDEST_VLLM_RELEASE,
  parseVllmVersion,
  servedTokenizerMode,
  type TokenizerMode,
  tokenizerMode,
  type VllmRules,
  vllmRules,
} from "@incontext/engine/vllm";
import { createServerInfo, type ServerInfo } from "../_shared/server_info.ts";
import { rejectingFetch } from "../_shared/status_fetch.ts";
import { errorType } from "../../core/error_type.ts";
import {
  type TemplatedCountOptions,
  vllmCount,
  vllmTokenizeBody,
} from "../_shared/vllm_count.ts";
import {
  answerInteger,
  checkServedContext,
  payloadJson,
} from "../_shared/http_count.ts";
import { HttpCounter } from "../_shared/http_counter.ts";
import {
  readServedModel,
  type ServedModel,
  servedRendering,
} from "../_shared/chat_prompt.ts";
import { Contradictions } from "../_shared/contradictions.ts";
import { effectiveField } from "../../core/request.ts";
import { countGuard } from "../_shared/count_guard.ts";
import type { BackendConfig } from "../_shared/config.ts";
import {
  type BundledBackend,
  httpOptionsFromConfig,
  requireConfig,
} from "../_shared/from_config.ts";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const WHAT = "the vLLM backend";
const LABEL = "vLLM /tokenize";
const SOURCE = "vllm-tokenize";
/** The label of a count known not to be the chat endpoint's prompt. */
const ESTIMATE_SOURCE = "vllm-tokenize-estimate";
/** vLLM's own context length, compared with the configured one. */
const SERVED_CONTEXT = "vLLM max_model_len";
const logger = getLogger(["incontext", "vllm"]);
const guardedCount = countGuard({
  what: WHAT,
  failure: `${LABEL} count failed`,
  logger,
});
/** `{"version": "0.x.y"}`: 4 KiB is far beyond a real answer. */
const VERSION_MAX_BYTES = 4096;

/** Options for {@linkcode VllmBackend}. */
export interface VllmBackendOptions extends HttpCountOptions {
  /** The `/tokenize` URL, such as `http://127.0.0.1:8000/tokenize`; a query string is fine. */
  readonly url: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` (vLLM's `--api-key`).
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
  /**
   * The vLLM release served, such as `"0.16.0"`: where releases differ on
   * what `/tokenize` cannot take as the chat endpoint does, the body follows
   * that release.
   *
   * @default {undefined} read once from the server's `GET /version` (beside
   * `/tokenize`), and only for a request whose body depends on it; the newest
   * release whose rules are known when that fails
   */
  readonly vllmVersion?: string;
  /**
   * The served model's `model_type`, from its folder's `config.json`: for
   * `gpt_oss`, which vLLM's chat endpoint renders through Harmony, every
   * count is an estimate. Unknown, a model name that says gpt-oss is, and
   * so is a model whose counts the server's usage contradicted twice.
   *
   * @default {undefined} the folder is not known
   */
  readonly modelType?: string;
  /**
   * vLLM's `--tokenizer-mode` as the server runs it (case-insensitive). In
   * `mistral` mode vLLM's chat endpoint cuts tool-call ids longer than 9
   * characters to their last 9 and gives every assistant message a
   * `tool_calls` list, and its `/tokenize` does neither: the body sent then
   * carries the ids and tool calls the chat endpoint renders. `auto` is
   * resolved from the files of `modelDir` as vLLM resolves it.
   *
   * @default {"auto"}
   */
  readonly tokenizerMode?: string;
  /**
   * The served model's folder, read for `tokenizerMode` `auto` only
   * (`consolidated*.safetensors` with `tekken.json` or `tokenizer.model.v*`
   * is `mistral`).
   *
   * @default {undefined} unknown: `auto` is not `mistral`
   */
  readonly modelDir?: string;
}

/**
 * Counts the exact prompt tokens of an OpenAI chat completions request with
 * vLLM's `POST /tokenize`, and reads output caps as vLLM does.
 *
 * A request `/tokenize` cannot mirror (a `tool_choice` other than `"auto"`
 * with tools, or a `response_format`) fails its count on purpose, with no
 * HTTP call, so that the caller falls back to an estimate.
 *
 * Where `/tokenize` is known not to render the chat endpoint's prompt
 * (gpt-oss, which vLLM renders through Harmony: a `modelType` of `gpt_oss`,
 * else a model name saying gpt-oss; or a model whose counts the server's
 * usage contradicted twice), the count is returned as all estimate, labelled
 * `"vllm-tokenize-estimate"`, and {@linkcode VllmBackend.estimateReason}
 * says why: budget() then counts from a usage anchor where one exists, and
 * keeps its fallback margin free.
 *
 * @example Counting with an injected fetch
 * ```ts
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { strictEqual } from "node:assert/strict";
 *
 * const backend = new VllmBackend({
 *   url: "http://127.0.0.1:8000/tokenize",
 *   cache: null,
 *   fetch: () => Promise.resolve(Response.json({ count: 17, max_model_len: 8192, tokens: [], token_strs: null })),
 * });
 * strictEqual(await backend.count({ messages: [{ role: "user", content: "Hi" }] }, { contextLength: 8192 }), 17);
 * strictEqual(backend.outputBudgetField("max_output_tokens"), "max_tokens");
 * strictEqual(backend.coerceOutputBudget(" 2_048 "), 2048);
 * ```
 */
export class VllmBackend extends Backend {
  /** The label of vLLM counts: `"vllm-tokenize"`. */
  override readonly source: string = SOURCE;
  /** The server's own context length, compared with the configured one on every count. */
  override get servedContext(): string {
    return SERVED_CONTEXT;
  }
  readonly #http: HttpCounter;
  readonly #rules: ServerInfo<VllmRules>;
  readonly #served: ServedModel;
  readonly #mode: TokenizerMode;
  readonly #modelDir: string | undefined;
  #mistral: Promise<boolean> | undefined;
  readonly #contradictions = new Contradictions({
    source: SOURCE,
    counter: "/tokenize",
    logger,
  });

  /**
   * Creates a vLLM backend. Nothing starts until the first count.
   *
   * @param options The URL and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, or `userAgent` or `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater
   * than 0, `vllmVersion` is not a vLLM version mirrored, or
   * `tokenizerMode` is not one of vLLM's tokenizer modes.
   */
  constructor(options: VllmBackendOptions) {
    super();
    this.#http = new HttpCounter({ what: WHAT, label: LABEL }, options);
    const pinned = options.vllmVersion === undefined
      ? undefined
      : vllmRules(options.vllmVersion);
    this.#rules = createServerInfo(
      (signal) =>
        pinned !== undefined
          ? Promise.resolve(pinned)
          : this.#readRelease(signal),
      this.#http.timeoutMs,
    );
    this.#served = options.modelType === undefined
      ? {}
      : { modelType: options.modelType };
    this.#mode = tokenizerMode(options.tokenizerMode ?? "auto");
    this.#modelDir = options.modelDir;
  }

  /**
   * Counts the prompt tokens of `request` with `/tokenize`, through the
   * count cache. Identical concurrent counts share one HTTP request.
   *
   * @param request A chat completions request body, never mutated.
   * @param options The served context length, which must equal the server's
   * `max_model_len`, and an abort signal.
   * @returns The exact prompt token count, capped at `truncate_prompt_tokens`
   * for text-only prompts; all estimate where `/tokenize` is known not to
   * be the chat endpoint's prompt.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If `/tokenize` answers 400: the server
   * refuses the request, as its chat endpoint would.
   * @throws {CountError} On every other counting failure: a request `/tokenize`
   * cannot mirror, a network error, a timeout, an abort, an invalid answer,
   * or an answer over 64 KiB + 16 bytes per context token (read no further).
   *
   * @example Failing on purpose
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { rejects } from "node:assert/strict";
   *
   * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize", cache: null });
   * const request = { messages: [], response_format: { type: "json_object" } };
   * await rejects(backend.count(request, { contextLength: 8192 }), CountError);
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult> {
    const tokens = await guardedCount(
      { source: this.source, request, options },
      vllmCount(
        options,
        (request, templated) => this.#countTemplated(request, templated),
      ),
    );
    const model = effectiveField(request, "model");
    return this.estimateReason(
        typeof model === "string" ? model : undefined,
      ) ===
        undefined
      ? tokens
      : { tokens, estimatedTokens: tokens, source: ESTIMATE_SOURCE };
  }

  /**
   * Why `/tokenize` is not the chat endpoint's prompt for `model`: the
   * folder's `model_type` is `gpt_oss`, else the name says gpt-oss, else
   * the server's usage contradicted two of its counts.
   *
   * @param model A model name as requests name it, or `undefined` for the
   * served model.
   * @returns The reason, or `undefined` while its counts are exact.
   *
   * @example gpt-oss is rendered through Harmony
   * ```ts
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { ok, strictEqual } from "node:assert/strict";
   *
   * const url = "http://127.0.0.1:8000/tokenize";
   * ok(new VllmBackend({ url, modelType: "gpt_oss" }).estimateReason(undefined)?.includes("Harmony"));
   * strictEqual(new VllmBackend({ url, modelType: "qwen3" }).estimateReason("gpt-oss-20b"), undefined);
   * ok(new VllmBackend({ url }).estimateReason("openai/gpt-oss-20b")?.includes("name says gpt-oss"));
   * ```
   */
  override estimateReason(model: string | undefined): string | undefined {
    return servedRendering(this.#served, model) ??
      this.#contradictions.reason(model);
  }

  /**
   * Tallies the server's usage against the exact counts: a model whose
   * counts it contradicts twice counts by estimate from then on.
   *
   * @param check The model, the count's label and both numbers.
   */
  override countChecked(check: CountCheck): void {
    this.#contradictions.checked(check);
  }

  /**
   * Forgets cached counts: clears the backend's count cache (with the
   * default, the process-wide one).
   *
   * @returns A promise that settles once the clear has taken effect.
   * @throws {CountError} If the cache is disposed.
   *
   * @example Counting again after a clear
   * ```ts
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { createCountCache } from "@incontext/incontext/cache";
   * import { createFakeVllmTokenizerHandler } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const fake = createFakeVllmTokenizerHandler();
   * await using cache = createCountCache({ inProcess: true });
   * const backend = new VllmBackend({ url: "http://fake.test/tokenize", fetch: fake.fetch, cache });
   * const request = { messages: [{ role: "user", content: "Hi" }] };
   * await backend.count(request, { contextLength: 65536 });
   * await backend.count(request, { contextLength: 65536 }); // from the cache
   * await backend.clearCache();
   * await backend.count(request, { contextLength: 65536 });
   * strictEqual(fake.requests.length, 2);
   * ```
   */
  override clearCache(): Promise<void> {
    this.#rules.clear();
    return this.#http.clearCache();
  }

  /**
   * Maps a cap field to the one the vLLM endpoint reads: chat completions
   * and completions ignore `max_output_tokens`, so that one becomes
   * `max_tokens`; the Responses endpoint reads only `max_output_tokens`.
   *
   * @param field The field incontext would write.
   * @param options The request's kind.
   * @returns `"max_output_tokens"` for Responses requests; otherwise
   * `"max_tokens"` for `"max_output_tokens"`, else `field`.
   *
   * @example Mapping the Responses cap
   * ```ts
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
   * strictEqual(backend.outputBudgetField("max_output_tokens"), "max_tokens");
   * strictEqual(backend.outputBudgetField("max_completion_tokens"), "max_completion_tokens");
   * strictEqual(backend.outputBudgetField("max_tokens", { kind: "responses" }), "max_output_tokens");
   * ```
   */
  override outputBudgetField(
    field: CapField,
    options: OutputFieldOptions = {},
  ): string {
    return vllmOutputField(field, options.kind);
  }

  /**
   * Reads a cap value as vLLM's request validation does (pydantic, lax
   * mode): integers, integral floats, digit strings such as `" 5 "`, `"+5"`,
   * `"5.0"` or `"1_0"`, and `true` (1).
   *
   * @param value A cap field's value.
   * @returns The cap as a positive safe integer, or `undefined` when vLLM
   * would not read a positive integer.
   *
   * @example Lax integers
   * ```ts
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
   * strictEqual(backend.coerceOutputBudget("512"), 512);
   * strictEqual(backend.coerceOutputBudget(512.0), 512);
   * strictEqual(backend.coerceOutputBudget("1.5"), undefined);
   * strictEqual(backend.coerceOutputBudget(false), undefined);
   * ```
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return laxPositiveInteger(value);
  }

  /**
   * The largest output cap vLLM accepts beyond the window: with
   * `truncate_prompt_tokens` T >= 0, the context length minus T.
   *
   * @param request The request body.
   * @param options The served context length.
   * @returns `contextLength - T` (never below 0), or `undefined` without truncation.
   *
   * @example Truncated prompts
   * ```ts
   * import { VllmBackend } from "@incontext/incontext/vllm";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
   * strictEqual(backend.outputBudgetLimit({ truncate_prompt_tokens: 1000 }, { contextLength: 8192 }), 7192);
   * strictEqual(backend.outputBudgetLimit({ truncate_prompt_tokens: -1 }, { contextLength: 8192 }), undefined);
   * ```
   */
  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return vllmOutputLimit(request, options.contextLength);
  }

  async #countTemplated(
    request: JsonObject,
    { kind, contextLength, signal }: TemplatedCountOptions,
  ): Promise<number> {
    // The release is read only when the body depends on it.
    const rules = kind !== "completion" && dependsOnRelease(request)
      ? await this.#rules.get(signal ?? new AbortController().signal)
      : undefined;
    let body = vllmTokenizeBody(request, kind, rules);
    if (kind !== "completion" && await this.#servesMistral()) {
      body = mistralChatBody(body);
    }
    return await this.#http.postCount({
      source: this.source,
      url: this.#http.url,
      json: payloadJson(body, { python: true }),
      contextLength,
      signal,
      maxBytes: maxTokenizeResponseBytes(contextLength),
      read: (answer) => readCount(answer, contextLength),
      // /tokenize parses and renders as the chat endpoint does: what it
      // refuses (an empty conversation, arguments that are not JSON, a
      // template that raises), the chat endpoint refuses too.
      adapt: (fetch) =>
        rejectingFetch(
          fetch,
          400,
          `${LABEL} rejects this request (its chat endpoint would too)`,
        ),
    });
  }

  /**
   * Whether the server runs the model in `mistral` mode: said, or resolved
   * once from the folder; a folder that cannot be read is taken as not,
   * logged by error type.
   */
  #servesMistral(): Promise<boolean> {
    const dir = this.#modelDir;
    if (this.#mode !== "auto" || dir === undefined) {
      return Promise.resolve(this.#mode === "mistral");
    }
    return this.#mistral ??= servedTokenizerMode("auto", dir).then(
      (mode) => mode === "mistral",
      (error) => {
        logger.warn(
          "The model folder could not be read for vLLM's tokenizer mode ({errorType}): counted as not mistral",
          { errorType: errorType(error) },
        );
        return false;
      },
    );
  }

  /**
   * The served release's rules, from `GET /version`; the newest known
   * release's when the server does not tell (a proxy without the route, an
   * error), logged by error type only.
   */
  async #readRelease(signal: AbortSignal): Promise<VllmRules> {
    try {
      const answer = await this.#http.fetchJson({
        label: "vLLM /version",
        url: versionUrl(this.#http.url),
        signal,
        maxBytes: VERSION_MAX_BYTES,
      });
      return rulesOfServer(answer.version);
    } catch (error) {
      logger.warn(
        "vLLM /version could not be read ({errorType}): the rules of vLLM {release} apply",
        { errorType: errorType(error), release: NEWEST_VLLM_RELEASE },
      );
      return vllmRules(NEWEST_VLLM_RELEASE);
    }
  }
}

/** `GET /version` beside the `/tokenize` URL, its query string kept. */
function versionUrl(tokenizeUrl: string): string {
  const url = new URL(tokenizeUrl);
  url.pathname = url.pathname.replace(/[^/]*\/?$/, "version");
  return url.href;
}

/**
 * The rules of a version a server reports: a release older than the oldest
 * mirrored gets the oldest rules; an unreadable version, the newest.
 */
function rulesOfServer(version: unknown): VllmRules {
  const parsed = typeof version === "string"
    ? parseVllmVersion(version)
    : undefined;
  if (parsed === undefined) return vllmRules(NEWEST_VLLM_RELEASE);
  try {
    return vllmRules(parsed.join("."));
  } catch {
    return vllmRules(OLDEST_VLLM_RELEASE);
  }
}

/** The count in a `/tokenize` answer, once its `max_model_len` is the configured one. */
function readCount(body: JsonObject, contextLength: number): number {
  const count = answerInteger(body, { label: LABEL, field: "count" });
  const maxModelLen = answerInteger(body, {
    label: LABEL,
    field: "max_model_len",
    min: 1,
  });
  checkServedContext(SERVED_CONTEXT, maxModelLen, contextLength);
  return count;
}

/**
 * Builds the `vllm` backend from configuration: `INCONTEXT_TOKENIZER_URL` is
 * its `/tokenize`, `INCONTEXT_TOKENIZER_API_KEY` the server's `--api-key`,
 * `INCONTEXT_VLLM_VERSION` the release whose rules it follows,
 * `INCONTEXT_VLLM_TOKENIZER_MODE` the server's tokenizer mode, and the files
 * of `INCONTEXT_TOKENIZER_DIR`, when set, the served model's type and, for
 * mode `auto`, whether it is served in `mistral` mode.
 *
 * @param config The loaded configuration.
 * @returns The backend, using the process-wide count cache.
 * @throws {ConfigError} If `INCONTEXT_TOKENIZER_URL` is missing.
 *
 * @example From configuration
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { VllmBackend, vllmFromConfig } from "@incontext/incontext/vllm";
 * import { ok } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * ok(vllmFromConfig(config) instanceof VllmBackend);
 * ```
 */
export function vllmFromConfig(config: BackendConfig): VllmBackend {
  const { tokenizerUrl } = requireConfig(VLLM, config);
  const { modelType } = readServedModel(config.tokenizerDir);
  return new VllmBackend({
    ...httpOptionsFromConfig(config, config.tokenizerApiKey),
    url: tokenizerUrl,
    ...(modelType === undefined ? {} : { modelType }),
    ...(config.vllmTokenizerMode === undefined
      ? {}
      : { tokenizerMode: config.vllmTokenizerMode }),
    ...(config.tokenizerDir === undefined
      ? {}
      : { modelDir: config.tokenizerDir }),
    ...(config.vllmVersion === undefined
      ? {}
      : { vllmVersion: config.vllmVersion }),
  });
}

/** The `vllm` backend as the bundled registry plugs it in. */
export const VLLM: BundledBackend<"tokenizerUrl"> = {
  name: "vllm",
  requires: ["tokenizerUrl"],
  factory: vllmFromConfig,
};
