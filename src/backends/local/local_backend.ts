// The `local` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CountOptions,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
} from "../../core/backend.ts";
import type { CountCache } from "../../cache/mod.ts";
import { CountError, countErrorOf } from "../../core/errors.ts";
import { type RemoteEngine, remoteEngine } from "../_shared/engine_client.ts";
import { LocalModels, type ModelSpec } from "@incontext/engine";
import { Lru } from "../../cache/lru.ts";
import { isJsonObject } from "../../core/request.ts";
import { asCountError } from "../../core/error_type.ts";
import { laxPositiveInteger } from "@incontext/engine/vllm";
import { vllmOutputField, vllmOutputLimit } from "@incontext/engine/vllm";
import {
  localCountBody,
  type TemplatedCountOptions,
  vllmCount,
} from "../_shared/vllm_count.ts";
import type { DecodeForm } from "@incontext/engine";
import {
  checkFolderOptions,
  type FilesSha256,
  folderSpec,
} from "@incontext/engine";
import {
  cachedCount,
  payloadJson,
  resolveCountCache,
} from "../_shared/http_count.ts";
import { countGuard } from "../_shared/count_guard.ts";
import type { BackendConfig } from "../_shared/config.ts";
import { type BundledBackend, requireConfig } from "../_shared/from_config.ts";
import { sharedCountCache } from "../../cache/mod.ts";
import { type VllmRules, vllmRules } from "@incontext/engine/vllm";

const WHAT = "the local backend";
const logger = getLogger(["incontext", "local"]);
const guardedCount = countGuard({
  what: WHAT,
  failure: "The local count failed",
  logger,
});

/** Options for {@linkcode LocalBackend}. */
export interface LocalBackendOptions {
  /** A Hugging Face model folder: `tokenizer.json`, `tokenizer_config.json`, `chat_template.jinja`. */
  readonly dir: string;
  /**
   * A chat template that overrides the folder's, as vLLM's `--chat-template`
   * does: a file path, else the template text itself when it holds `{`, `}`
   * or a newline (vLLM's `load_chat_template`).
   *
   * @default {undefined} the folder's, picked as vLLM picks it: without
   * tools, a multimodal folder's `chat_template.json`; else the tokenizer's
   * (`chat_template.jinja` and `additional_chat_templates/`, else
   * `tokenizer_config.json`'s), `tool_use` with tools, else `default`
   */
  readonly chatTemplate?: string;
  /**
   * The expected SHA-256 of `tokenizer.json`, 64 hex characters; on a
   * mismatch every count fails.
   *
   * @default {undefined} not checked
   */
  readonly expectedSha256?: string;
  /**
   * The vLLM release whose preprocessing is mirrored where releases differ
   * (the reasoning fields, empty tool-call lists, tool results in parts,
   * `reasoning_effort`), such as `"0.16.0"`; any version from the oldest
   * mirrored on, a later patch or development build reading as its release.
   *
   * @default {undefined} the newest release whose rules are known
   */
  readonly vllmVersion?: string;
  /**
   * vLLM's tokenizer mode, as its `--tokenizer-mode` (case-insensitive):
   * `auto` resolves as vLLM resolves it (the DeepSeek V3.2 and V4 and Grok
   * architectures in `config.json` pick their own modes; a folder with
   * Mistral's `consolidated*.safetensors` and `tekken.json` or
   * `tokenizer.model.v*` picks `mistral`; anything else `hf`). `hf` renders
   * the chat template; `deepseek_v32` and `deepseek_v4` render as vLLM's
   * DeepSeek encoders do; `grok2` counts prompts with `tokenizer.tok.json`
   * and refuses chats, which vLLM fails in that mode. The modes vLLM
   * tokenizes with other libraries (`mistral`, `slow`, `fastokens`,
   * `kimi_audio`, `qwen_vl`) fail the load, naming the mode: count those
   * with the `vllm` backend.
   *
   * @default {"auto"}
   */
  readonly tokenizerMode?: string;
  /**
   * How the chat template reads `message.content`, as vLLM's
   * `--chat-template-content-format`: `"string"`, `"openai"` (a list of
   * text parts), or `"auto"`, detected from the template's syntax tree as
   * vLLM detects it.
   *
   * @default {"auto"}
   */
  readonly chatTemplateContentFormat?: "auto" | "string" | "openai";
  /**
   * The server's `--default-chat-template-kwargs`: merged under each
   * request's `chat_template_kwargs` as vLLM merges them (a request's value
   * wins unless it is `null` or `"auto"`), such as `{ enable_thinking: false }`.
   *
   * @default {undefined} none
   */
  readonly defaultChatTemplateKwargs?: Readonly<Record<string, unknown>>;
  /**
   * The clock the template's `strftime_now` reads. A function cannot reach
   * the count worker: with a clock, counts run on the calling thread.
   *
   * @default {() => new Date()}
   */
  readonly now?: () => Date;
  /**
   * Where counts are cached, and where they run: a cache from
   * `createCountCache` or `sharedCountCache` loads the files and counts
   * inside its worker (whole counts and piece counts in its LRU); `null`
   * counts on the calling thread and caches no whole counts.
   *
   * @default {sharedCountCache()} resolved at each count
   */
  readonly cache?: CountCache | null;
}

/**
 * Counts the exact prompt tokens of a request in process: renders the
 * model's chat template as Python jinja2 would, after vLLM's message
 * preprocessing, and tokenizes the result as the Rust `tokenizers` crate
 * would. Output caps are read as vLLM reads them.
 *
 * Files load on the first count (concurrent first counts share one load),
 * or at {@linkcode LocalBackend.load}; with a count cache from this package
 * they load inside its worker, once per model folder per process, so that
 * neither loading nor counting blocks the caller's event loop.
 * Media parts, and requests `/tokenize` cannot mirror, fail their count so
 * that the caller falls back to an estimate; a request the template rejects
 * fails with {@linkcode TemplateRejectedError}.
 *
 * @example Counting the text form
 * ```ts
 * import { LocalBackend } from "@incontext/incontext/local";
 * import { strictEqual } from "node:assert/strict";
 *
 * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
 * const backend = new LocalBackend({ dir, cache: null });
 * const count = await backend.count({ prompt: "hi" }, { contextLength: 8192, kind: "completion" });
 * strictEqual(typeof count, "number");
 * await backend[Symbol.asyncDispose]();
 * ```
 */
export class LocalBackend extends Backend implements AsyncDisposable {
  /** The label of local counts: `"local-tokenizer"`. */
  override readonly source: string = "local-tokenizer";
  readonly #cache: CountCache | null | undefined;
  readonly #spec: ModelSpec;
  readonly #rules: VllmRules;
  /** Counts on the calling thread (no cache, a clock, or a cache of another make). */
  #host: LocalModels | undefined;
  #disposed = false;

  /**
   * Creates a local backend. Nothing is read until the first count.
   *
   * @param options The model folder and the optional settings.
   * @throws {TypeError} If `dir` is not a non-empty string, or
   * `expectedSha256` is not 64 hex characters, or
   * `chatTemplateContentFormat` is not auto, string or openai, or
   * `defaultChatTemplateKwargs` is not an object.
   * @throws {RangeError} If `vllmVersion` is not a vLLM release mirrored,
   * or `tokenizerMode` is not one of vLLM's tokenizer modes.
   */
  constructor(options: LocalBackendOptions) {
    super();
    checkFolderOptions(WHAT, options);
    this.#cache = options.cache;
    this.#spec = folderSpec({
      ...options,
      tokenizerMode: options.tokenizerMode ?? "auto",
    });
    this.#rules = vllmRules(options.vllmVersion);
  }

  /**
   * Loads the files where counts run (the count cache's worker, or the
   * calling thread with `cache: null`), if not loaded yet, and tells their
   * SHA-256: call it at start-up to fail early on the wrong files and to
   * log which files are served.
   *
   * @returns The SHA-256 of `tokenizer.json`, `tokenizer_config.json` and the chat template.
   * @throws {CountError} If the files cannot be read or built,
   * `tokenizer.json` does not match `expectedSha256`, or the tokenizer mode
   * is one the local backend cannot mirror.
   *
   * @example Checking the files at start-up
   * ```ts
   * import { LocalBackend } from "@incontext/incontext/local";
   * import { match } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new LocalBackend({ dir, cache: null });
   * const files = await backend.load();
   * match(files.tokenizer, /^[0-9a-f]{64}$/);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  async load(): Promise<FilesSha256> {
    if (this.#disposed) throw disposedError();
    const remote = this.#remote(resolveCountCache(this.#cache));
    try {
      return remote !== undefined
        ? await remote.load(this.#spec)
        : await this.#ownHost().load(this.#spec);
    } catch (error) {
      throw asCountError(error, "Cannot load the model folder");
    }
  }

  /**
   * Counts the prompt tokens of `request` exactly: the chat template's
   * render tokenized without special tokens (the template writes them), or
   * for `kind: "completion"` the `prompt` with special tokens unless the
   * request sets `add_special_tokens: false`.
   *
   * @param request The request body, never mutated.
   * @param options The context length (not compared with the files), the kind, an abort signal.
   * @returns The exact prompt token count.
   * @throws {RangeError} If `contextLength` is not a positive integer.
   * @throws {TemplateRejectedError} If the chat template rejects the request.
   * @throws {CountError} On any other failure, including media parts and a
   * `tokenizer.json` whose SHA-256 is not the expected one.
   *
   * @example A request the template cannot count falls back
   * ```ts
   * import { CountError } from "@incontext/incontext";
   * import { LocalBackend } from "@incontext/incontext/local";
   * import { rejects } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new LocalBackend({ dir, cache: null });
   * const image = { type: "image_url", image_url: { url: "data:," } };
   * const request = { messages: [{ role: "user", content: [image] }] };
   * await rejects(backend.count(request, { contextLength: 8192 }), CountError);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number> {
    return await guardedCount(
      { source: this.source, request, options },
      vllmCount(
        options,
        (request, templated) => this.#countTemplated(request, templated),
      ),
    );
  }

  /**
   * Forgets cached counts: clears the backend's count cache.
   *
   * @returns A promise that settles once the clear has taken effect.
   */
  override clearCache(): Promise<void> {
    return resolveCountCache(this.#cache)?.clear() ?? Promise.resolve();
  }

  /**
   * Maps a cap field as vLLM does: Responses read `max_output_tokens`;
   * otherwise `max_output_tokens` becomes `max_tokens`.
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
   * Reads a cap value as vLLM's request validation does (lax integers).
   *
   * @param value A cap field's value.
   * @returns The cap as a positive safe integer, or `undefined`.
   */
  override coerceOutputBudget(value: unknown): number | undefined {
    return laxPositiveInteger(value);
  }

  /**
   * The output limit `truncate_prompt_tokens` T implies: `contextLength - T`.
   *
   * @param request The request body.
   * @param options The context length.
   * @returns The limit, or `undefined` without truncation.
   */
  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return vllmOutputLimit(request, options.contextLength);
  }

  /**
   * Tokenizes a vLLM `/tokenize` body as vLLM would: the chat form
   * (`messages`, `tools`, `add_generation_prompt` defaulting to `true`,
   * `continue_final_message`, `chat_template_kwargs`, `add_special_tokens`
   * defaulting to `false`) is rendered and tokenized exactly as
   * {@linkcode LocalBackend.count} counts it; the text form (`prompt`) adds
   * special tokens unless `add_special_tokens` is `false`. A body's own
   * `chat_template` is used as given: the caller decides whether to trust it.
   *
   * @param body A `/tokenize` request body.
   * @returns The token ids.
   * @throws {TemplateRejectedError} If the chat template rejects the conversation.
   * @throws {CountError} If the body is malformed or the files fail to load.
   *
   * @example Tokenizing the text form
   * ```ts
   * import { LocalBackend } from "@incontext/incontext/local";
   * import { ok } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new LocalBackend({ dir, cache: null });
   * const ids = await backend.tokenize({ prompt: "hi there" });
   * ok(ids.every(Number.isInteger));
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  async tokenize(body: JsonObject): Promise<number[]> {
    if (this.#disposed) throw disposedError();
    if (!isJsonObject(body)) {
      throw new CountError(
        "Cannot tokenize the body as it is not a JSON object",
      );
    }
    // The cache's core loads, renders and tokenizes: nothing heavy runs here.
    const remote = this.#remote(resolveCountCache(this.#cache));
    if (remote !== undefined) {
      return await remote.tokenize(this.#spec, body);
    }
    return await this.#ownHost().tokenize(this.#spec, body).catch(rethrown);
  }

  /**
   * Decodes token ids back to text, special tokens included, as vLLM's
   * `/detokenize` does.
   *
   * @param ids The token ids.
   * @returns The text.
   * @throws {CountError} If an id is not in the vocabulary.
   *
   * @example A round trip
   * ```ts
   * import { LocalBackend } from "@incontext/incontext/local";
   * import { strictEqual } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new LocalBackend({ dir, cache: null });
   * const ids = await backend.tokenize({ prompt: "hi", add_special_tokens: false });
   * strictEqual(typeof await backend.detokenize(ids), "string");
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  async detokenize(ids: readonly number[]): Promise<string> {
    return await this.#decode(ids, "text") as string;
  }

  /**
   * The vocabulary's string of each token id (vLLM's `token_strs`, as
   * `convert_ids_to_tokens` gives them).
   *
   * @param ids The token ids.
   * @returns One string per id.
   * @throws {CountError} If an id is not in the vocabulary.
   *
   * @example One string per id
   * ```ts
   * import { LocalBackend } from "@incontext/incontext/local";
   * import { strictEqual } from "node:assert/strict";
   *
   * const dir = new URL("../../../tests/fixtures/model_folder/", import.meta.url).pathname;
   * const backend = new LocalBackend({ dir, cache: null });
   * const ids = await backend.tokenize({ prompt: "hi there" });
   * strictEqual((await backend.tokenStrings(ids)).length, ids.length);
   * await backend[Symbol.asyncDispose]();
   * ```
   */
  async tokenStrings(ids: readonly number[]): Promise<string[]> {
    return await this.#decode(ids, "strings") as string[];
  }

  /**
   * Frees the loaded tokenizer and template; later counts fail.
   *
   * @returns A promise that settles at once.
   */
  [Symbol.asyncDispose](): Promise<void> {
    this.#disposed = true;
    this.#host = undefined;
    return Promise.resolve();
  }

  /** The local engine of the count cache's core, unless a clock must stay on this thread. */
  #remote(cache: CountCache | null): RemoteEngine | undefined {
    return this.#spec.now === undefined ? remoteEngine(cache) : undefined;
  }

  #ownHost(): LocalModels {
    if (this.#host === undefined) {
      // No whole counts are kept here; piece counts in a private LRU, as
      // bounded as the default count cache.
      const pieces = new Lru({ maxEntries: 4096, maxKeyBytes: 1_048_576 });
      this.#host = new LocalModels({
        store: () => {},
        epoch: () => 0,
        pieces,
      });
    }
    return this.#host;
  }

  /** Decodes where the model lives: the cache's core, or this thread. */
  async #decode(
    ids: readonly number[],
    form: DecodeForm,
  ): Promise<string | string[]> {
    if (this.#disposed) throw disposedError();
    // Only arrays of integers go on; the model's host checks the vocabulary.
    if (!Array.isArray(ids) || !ids.every(Number.isSafeInteger)) {
      throw new CountError(
        "Cannot detokenize as 'tokens' must be an array of token ids in the vocabulary",
      );
    }
    const remote = this.#remote(resolveCountCache(this.#cache));
    if (remote !== undefined) {
      return await remote.decode(this.#spec, [...ids], form);
    }
    return await this.#ownHost().decode(this.#spec, ids, form).catch(rethrown);
  }

  async #countTemplated(
    request: JsonObject,
    { kind, contextLength, signal }: TemplatedCountOptions,
  ): Promise<number> {
    if (this.#disposed) throw disposedError();
    const payload = localCountBody(request, kind, this.#rules);
    const job = { spec: this.#spec, kind, payload };
    const cache = resolveCountCache(this.#cache);
    const remote = this.#remote(cache);
    // The cache's core loads, looks up and counts: nothing heavy runs here.
    if (remote !== undefined) return await remote.count(job, signal);
    const host = this.#ownHost();
    if (cache === null) {
      signal?.throwIfAborted();
      await host.load(this.#spec);
      // The count itself runs at once, on this thread: abort only before it.
      signal?.throwIfAborted();
      return await host.count(job);
    }
    // A cache of another make (or a clock): whole counts through it, keyed
    // by the files, the release and the renderer.
    const identity = await host.identity(this.#spec);
    signal?.throwIfAborted();
    return await cachedCount({
      cache,
      endpoint: `${this.source} ${identity}`,
      contextLength,
      payload: payloadJson(payload, { python: true }),
      signal,
    }, () => host.count(job));
  }
}

function disposedError(): CountError {
  return new CountError(`Cannot count as ${WHAT} is disposed`);
}

/**
 * Builds the `local` backend from configuration: the model folder from
 * `INCONTEXT_TOKENIZER_DIR`; `INCONTEXT_CHAT_TEMPLATE`,
 * `INCONTEXT_TOKENIZER_SHA256`, `INCONTEXT_VLLM_VERSION`,
 * `INCONTEXT_VLLM_TOKENIZER_MODE` and
 * `INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT` are optional.
 *
 * @param config The loaded configuration.
 * @returns The backend, counting in the process-wide count cache; nothing is
 * read until its first count.
 * @throws {ConfigError} If `INCONTEXT_TOKENIZER_DIR` is missing.
 *
 * @example From configuration
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { LocalBackend, localFromConfig } from "@incontext/incontext/local";
 * import { ok } from "node:assert/strict";
 *
 * const config = loadConfig({ INCONTEXT_BACKEND: "local", INCONTEXT_TOKENIZER_DIR: "/models/qwen3" });
 * ok(localFromConfig(config) instanceof LocalBackend);
 * ```
 */
export function localFromConfig(config: BackendConfig): LocalBackend {
  const { tokenizerDir } = requireConfig(LOCAL, config);
  return new LocalBackend({
    dir: tokenizerDir,
    ...(config.chatTemplate === undefined
      ? {}
      : { chatTemplate: config.chatTemplate }),
    ...(config.tokenizerSha256 === undefined
      ? {}
      : { expectedSha256: config.tokenizerSha256 }),
    ...(config.vllmVersion === undefined
      ? {}
      : { vllmVersion: config.vllmVersion }),
    ...(config.vllmTokenizerMode === undefined
      ? {}
      : { tokenizerMode: config.vllmTokenizerMode }),
    ...(config.chatTemplateContentFormat === undefined
      ? {}
      : { chatTemplateContentFormat: config.chatTemplateContentFormat }),
    ...(config.defaultChatTemplateKwargs === undefined
      ? {}
      : { defaultChatTemplateKwargs: config.defaultChatTemplateKwargs }),
    cache: sharedCountCache({ maxEntries: config.cacheEntries }),
  });
}

/** The `local` backend as the bundled registry plugs it in. */
export const LOCAL: BundledBackend<"tokenizerDir"> = {
  name: "local",
  requires: ["tokenizerDir"],
  factory: localFromConfig,
};

/** An error of the engine on this thread, as the CountError a caller catches. */
function rethrown(error: unknown): never {
  throw countErrorOf(error);
}
