// The `sglang` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type RequestKind,
} from "../../core/backend.ts";
import { CountError } from "../../core/errors.ts";
import { asCountError } from "../../core/error_type.ts";
import type { BackendConfig } from "../_shared/config.ts";
import { effectiveField } from "../../core/request.ts";
import type { Deadline } from "../../_internal/deadline.ts";
import { laxPositiveInteger } from "@incontext/engine/vllm";
import {
  maxTokenizeResponseBytes,
  vllmOutputField,
} from "@incontext/engine/vllm";
import { answerInteger, payloadJson } from "../_shared/http_count.ts";
import { HttpCounter } from "../_shared/http_counter.ts";
import { type RemoteEngine, remoteEngine } from "../_shared/engine_client.ts";
import { localTokenizeBody } from "../_shared/vllm_count.ts";
import { countGuard } from "../_shared/count_guard.ts";
import {
  type BundledBackend,
  httpOptionsFromConfig,
  requireConfig,
} from "../_shared/from_config.ts";
import {
  checkFolderOptions,
  filesIdentity,
  type FilesSha256,
  folderSpec,
  LocalModels,
  type ModelSpec,
} from "@incontext/engine";
import type { HttpCountOptions } from "../_shared/http_count_options.ts";

const logger = getLogger(["incontext", "sglang"]);
const WHAT = "the SGLang backend";
const LABEL = "SGLang /tokenize";
const guardedCount = countGuard({
  what: WHAT,
  failure: "The SGLang count failed",
  logger,
});

/** Options for {@linkcode SglangBackend}. */
export interface SglangBackendOptions extends HttpCountOptions {
  /** The server's base URL, such as `http://127.0.0.1:30000`; `/tokenize` is appended, a query string kept. */
  readonly url: string;
  /** The model folder the server serves: its chat template renders chat requests. */
  readonly dir: string;
  /**
   * A chat template overriding the folder's, as the server's
   * `--chat-template`: a file path, else the template text itself when it
   * holds `{`, `}` or a newline.
   *
   * @default {undefined} `chat_template.jinja`, else `tokenizer_config.json`'s `chat_template`
   */
  readonly chatTemplate?: string;
  /**
   * The expected SHA-256 of `tokenizer.json`, 64 hex characters; on a
   * mismatch every chat count fails.
   *
   * @default {undefined} not checked
   */
  readonly expectedSha256?: string;
  /**
   * The clock the template's `strftime_now` reads.
   *
   * @default {() => new Date()}
   */
  readonly now?: () => Date;
  /**
   * Sent as `Authorization: Bearer <apiKey>` (SGLang's `--api-key`).
   *
   * @default {undefined} no `Authorization` header
   */
  readonly apiKey?: string;
}

/** {@linkcode OutputLimitOptions} with the counted prompt, when the caller knows it. */
export interface SglangOutputLimitOptions extends OutputLimitOptions {
  /**
   * The prompt's tokens.
   *
   * @default {0} (the limit is then only the context length minus 1)
   */
  readonly promptTokens?: number;
}

/**
 * Counts the exact prompt tokens of a request with SGLang's `POST
 * /tokenize`. A chat (or Responses) request is rendered locally with the
 * model folder's chat template, after the same preprocessing as the local
 * backend, and the text is sent with `add_special_tokens: false` (the
 * render already holds BOS); a completion's `prompt` is sent with
 * `add_special_tokens: true`. SGLang's `max_model_len` is the tokenizer's,
 * not the server's, so it is ignored: the context length comes from
 * configuration. SGLang accepts prompt + `max_tokens` <= context - 1.
 *
 * A request the template rejects fails with `TemplateRejectedError`;
 * requests the template cannot mirror, media parts and every server fault
 * fail with a `CountError`, so that budget() falls back.
 *
 * @example Reading caps as SGLang does
 * ```ts
 * import { SglangBackend } from "@incontext/incontext/sglang";
 * import { strictEqual } from "node:assert/strict";
 *
 * const backend = new SglangBackend({ url: "http://127.0.0.1:30000", dir: "/models/qwen3" });
 * strictEqual(backend.outputBudgetField("max_output_tokens"), "max_tokens");
 * strictEqual(backend.coerceOutputBudget("512"), 512);
 * strictEqual(backend.outputBudgetLimit({}, { contextLength: 8192, promptTokens: 100 }), 8091);
 * ```
 */
export class SglangBackend extends Backend implements AsyncDisposable {
  /** The label of SGLang counts: `"sglang-tokenize"`. */
  override readonly source: string = "sglang-tokenize";
  readonly #http: HttpCounter;
  readonly #spec: ModelSpec;
  /** The engine on this thread, when there is no count worker to render in. */
  #host: LocalModels | undefined;
  /** The files' hashes, once the count worker has loaded them. */
  #files: Promise<FilesSha256> | undefined;
  #disposed = false;

  /**
   * Creates an SGLang backend. Nothing is read or sent until the first count.
   *
   * @param options The base URL, the model folder and the optional settings.
   * @throws {TypeError} If `url` breaks a URL rule, `dir` is not a non-empty
   * string, `expectedSha256` is not 64 hex characters, or `userAgent` or
   * `apiKey` is not a valid header value.
   * @throws {RangeError} If `timeoutSeconds` is not a finite number greater than 0.
   */
  constructor(options: SglangBackendOptions) {
    super();
    this.#http = new HttpCounter({ what: WHAT, label: LABEL }, options);
    checkFolderOptions(WHAT, options);
    this.#spec = folderSpec(options);
  }

  /**
   * Counts the prompt tokens of `request` with `/tokenize`, through the
   * count cache.
   *
   * @param request The request body, never mutated.
   * @param options The context length (from configuration; the server's
   * `max_model_len` is not compared), the kind, an abort signal.
   * @returns The exact prompt token count.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If the chat template rejects the request.
   * @throws {CountError} On any other failure: an HTTP error (429 and 5xx
   * included, never retried), a network error, a timeout, an abort, an
   * invalid answer, a request the template cannot mirror, or a file that
   * does not load.
   *
   * @example A server fault fails the count
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { SglangBackend } from "@incontext/incontext/sglang";
   * import { createFakeSglangHandler } from "@incontext/incontext/testing";
   * import { rejects } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const fake = createFakeSglangHandler({ fault: "http-500" });
   * const backend = new SglangBackend({ url: "http://fake.test", dir, fetch: fake.fetch, cache: null });
   * await rejects(backend.count({ prompt: "Once" }, { contextLength: 8192, kind: "completion" }), CountError);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    return await guardedCount(
      { source: this.source, request, options },
      (request, contextLength) =>
        this.#http.within(
          options.signal,
          (deadline) =>
            this.#count(request, {
              kind: options.kind ?? "chat",
              contextLength,
              deadline,
            }),
        ),
    );
  }

  /**
   * Forgets cached counts: clears the backend's count cache.
   *
   * @returns A promise that settles once the clear has taken effect.
   */
  override clearCache(): Promise<void> {
    return this.#http.clearCache();
  }

  /**
   * Maps a cap field to the one SGLang reads: Responses read
   * `max_output_tokens`; chat and completions ignore it, so it becomes
   * `max_tokens`.
   *
   * @param field The field incontext would write.
   * @param options The request's kind.
   * @returns The field to write on the wire.
   */
  override outputBudgetField(
    field: CapField,
    options: OutputFieldOptions = {},
  ): string {
    return vllmOutputField(field, options.kind);
  }

  /**
   * Reads a cap value as SGLang's request validation (pydantic, lax mode) does.
   *
   * @param value A cap field's value.
   * @returns The cap as a positive safe integer, or `undefined`.
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return laxPositiveInteger(value);
  }

  /**
   * SGLang accepts prompt + `max_tokens` <= context - 1: the largest cap is
   * the context length minus 1 minus the prompt.
   *
   * @param _request The request body.
   * @param options The context length and, when known, the prompt's tokens.
   * @returns `contextLength - 1 - promptTokens`, never below 0.
   */
  override outputBudgetLimit(
    _request: JsonObject,
    options: SglangOutputLimitOptions,
  ): number {
    return Math.max(0, options.contextLength - 1 - (options.promptTokens ?? 0));
  }

  /**
   * Loads the model folder where chat requests are rendered (the count
   * cache's worker, or this thread with `cache: null` or a clock), if not
   * loaded yet, and tells its files' SHA-256: call it at start-up to fail
   * early on the wrong files and to log which are used.
   *
   * @returns The SHA-256 of `tokenizer.json`, `tokenizer_config.json` and the chat template.
   * @throws {CountError} If the files cannot be read or built, or
   * `tokenizer.json` does not match `expectedSha256`.
   *
   * @example Checking the files at start-up
   * ```ts
   * import { SglangBackend } from "@incontext/incontext/sglang";
   * import { match } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new SglangBackend({ url: "http://127.0.0.1:30000", dir, cache: null });
   * match((await backend.load()).tokenizer, /^[0-9a-f]{64}$/);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  async load(): Promise<FilesSha256> {
    try {
      const remote = this.#remote();
      return remote !== undefined
        ? await this.#workerFiles(remote)
        : await this.#ownHost().load(this.#spec);
    } catch (error) {
      throw asCountError(error, "Cannot load the model folder");
    }
  }

  /**
   * Frees the loaded tokenizer and templates; later counts fail.
   *
   * @returns A promise that settles at once.
   */
  [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    this.#files = undefined;
    this.#host = undefined;
    return Promise.resolve();
  }

  async #count(
    request: JsonObject,
    { kind, contextLength, deadline }: {
      readonly kind: RequestKind;
      readonly contextLength: number;
      readonly deadline: Deadline;
    },
  ): Promise<number> {
    const post = (body: string) => this.#post(body, contextLength, deadline);
    const key = `${this.source} ${this.#http.url}`;
    if (kind === "completion") {
      const prompt = effectiveField(request, "prompt");
      if (typeof prompt !== "string") {
        throw new CountError(
          "Cannot count a completion without a prompt string",
        );
      }
      const json = payloadJson({ prompt, add_special_tokens: true });
      return await this.#http.cached(
        { key, contextLength, json, deadline },
        () => post(json),
      );
    }
    const payload = localTokenizeBody(request, kind);
    const json = payloadJson(payload, { python: true });
    const remote = this.#remote();
    // The files load, and the chat renders, in the count cache's worker when
    // there is one: neither blocks this thread's event loop.
    const files = remote !== undefined
      ? await this.#workerFiles(remote)
      : await this.#ownHost().load(this.#spec);
    deadline.signal.throwIfAborted();
    const job = { spec: this.#spec, kind, payload };
    const render = async (): Promise<string> =>
      remote !== undefined
        ? await remote.render(job, deadline.signal)
        : await this.#ownHost().render(job);
    // The key holds the files' identity: another template renders another prompt.
    return await this.#http.cached(
      { key: `${key} ${filesIdentity(files)}`, contextLength, json, deadline },
      async () =>
        await post(
          payloadJson({ prompt: await render(), add_special_tokens: false }),
        ),
    );
  }

  /** The local engine of the count cache's core, unless a clock must stay on this thread. */
  #remote(): RemoteEngine | undefined {
    return this.#spec.now === undefined
      ? remoteEngine(this.#http.countCache())
      : undefined;
  }

  /** The engine on this thread: it loads the folder and renders, no counts kept. */
  #ownHost(): LocalModels {
    if (this.#disposed) {
      throw new CountError(`Cannot count as ${WHAT} is disposed`);
    }
    this.#host ??= new LocalModels({
      store: () => {},
      epoch: () => 0,
      pieces: new Map(),
    });
    return this.#host;
  }

  /** The files' hashes, loaded once in the worker (a failed load is tried again). */
  #workerFiles(remote: RemoteEngine): Promise<FilesSha256> {
    if (this.#disposed) {
      return Promise.reject(
        new CountError(`Cannot count as ${WHAT} is disposed`),
      );
    }
    this.#files ??= remote.load(this.#spec).catch((error) => {
      this.#files = undefined;
      throw error;
    });
    return this.#files;
  }

  async #post(
    body: string,
    contextLength: number,
    deadline: Deadline,
  ): Promise<number> {
    const answer = await this.#http.fetchJson({
      url: this.#http.endpoint("/tokenize"),
      body,
      signal: deadline.signal,
      maxBytes: maxTokenizeResponseBytes(contextLength),
    });
    return answerInteger(answer, { label: LABEL, field: "count" });
  }
}

/**
 * Builds the `sglang` backend from the configuration: the server's base URL
 * from `INCONTEXT_TOKENIZER_URL` and the model folder from
 * `INCONTEXT_TOKENIZER_DIR`, both required; `INCONTEXT_TOKENIZER_API_KEY`,
 * `INCONTEXT_CHAT_TEMPLATE` and `INCONTEXT_TOKENIZER_SHA256` are optional.
 *
 * @param config The loaded configuration.
 * @returns The backend; nothing is read until the first count.
 * @throws {ConfigError} Listing each of the two required variables that is missing.
 *
 * @example Both variables are required
 * ```ts
 * import { sglangFromConfig } from "@incontext/incontext/sglang";
 * import { ConfigError, loadConfig } from "@incontext/incontext/config";
 * import { strictEqual, throws } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:30000" });
 * throws(() => sglangFromConfig(config), ConfigError);
 * const backend = sglangFromConfig({ ...config, tokenizerDir: "/models/qwen3" });
 * strictEqual(backend.source, "sglang-tokenize");
 * ```
 */
export function sglangFromConfig(config: BackendConfig): SglangBackend {
  const { tokenizerUrl, tokenizerDir } = requireConfig(SGLANG, config);
  return new SglangBackend({
    ...httpOptionsFromConfig(config, config.tokenizerApiKey),
    url: tokenizerUrl,
    dir: tokenizerDir,
    ...(config.chatTemplate === undefined
      ? {}
      : { chatTemplate: config.chatTemplate }),
    ...(config.tokenizerSha256 === undefined
      ? {}
      : { expectedSha256: config.tokenizerSha256 }),
  });
}

/** The `sglang` backend as the bundled registry plugs it in. */
export const SGLANG: BundledBackend<"tokenizerUrl" | "tokenizerDir"> = {
  name: "sglang",
  requires: ["tokenizerUrl", "tokenizerDir"],
  factory: sglangFromConfig,
};
