/**
 * The configuration as a plain type: every setting, the environment variable
 * each one is read from, and the defaults. Reading and checking the
 * environment is `loadConfig()`'s work, in the `./config` entry.
 *
 * @module
 */
import { VERSION } from "./version.ts";

/**
 * The validated configuration: a plain, immutable object. Each property names
 * its variable and, where one exists, the original plugin's legacy alias.
 *
 * @example Deriving a configuration for a test
 * ```ts
 * import { type Config, loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const base = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * const config: Config = { ...base, model: "Qwen/Qwen3-8B" };
 * strictEqual(config.model, "Qwen/Qwen3-8B");
 * strictEqual(config.cacheEntries, 4096);
 * ```
 */
export interface Config {
  /**
   * `INCONTEXT_BACKEND` (legacy `HERMES_DYNAMIC_BUDGET_BACKEND`): the backend
   * name, or the first of a chain such as `local,vllm`. Unset, it is `local`
   * when `INCONTEXT_TOKENIZER_DIR` is set (with `vllm` behind it when
   * `INCONTEXT_TOKENIZER_URL` is set too), else `vllm`.
   *
   * @default "vllm"
   */
  readonly backend: string;
  /**
   * `INCONTEXT_BACKEND`'s names after the first, in order: the backends a
   * model moves on to when a response's usage contradicts a count. Absent
   * for a single backend.
   */
  readonly backendFallbacks?: readonly string[];
  /**
   * `INCONTEXT_BACKEND_FALLBACK_TURNS`: how many verified counts a model
   * makes on a later backend of the chain before the first is tried again.
   * Unset, a model stays on the later backend until restart.
   */
  readonly backendFallbackTurns?: number;
  /** `INCONTEXT_TOKENIZER_URL` (legacy `HERMES_VLLM_TOKENIZER_URL`): an http(s) URL; `vllm` requires it. */
  readonly tokenizerUrl?: string;
  /**
   * `INCONTEXT_TOKENIZER_TIMEOUT_SECONDS` (legacy `HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS`).
   *
   * @default 30
   */
  readonly tokenizerTimeoutSeconds: number;
  /**
   * `INCONTEXT_TOKENIZER_USER_AGENT` (legacy `HERMES_VLLM_TOKENIZER_USER_AGENT`).
   *
   * @default "incontext/VERSION"
   */
  readonly tokenizerUserAgent: string;
  /** `INCONTEXT_TOKENIZER_API_KEY`: a secret, never echoed in errors or logs. */
  readonly tokenizerApiKey?: string;
  /** `INCONTEXT_ANTHROPIC_API_KEY`: sent as `x-api-key` by the `anthropic` backend only; a secret. */
  readonly anthropicApiKey?: string;
  /** `INCONTEXT_GEMINI_API_KEY`: sent as `x-goog-api-key` by the `gemini` backend only; a secret. */
  readonly geminiApiKey?: string;
  /** `INCONTEXT_OPENAI_API_KEY`: sent as a bearer token by the `openai` backend only; a secret. */
  readonly openaiApiKey?: string;
  /**
   * `INCONTEXT_TOKENIZER_DIR`: the Hugging Face model folder the vLLM server
   * serves; `local` requires it.
   */
  readonly tokenizerDir?: string;
  /**
   * `INCONTEXT_CHAT_TEMPLATE`: a chat template overriding the folder's (as
   * vLLM's `--chat-template`): a file path, or the template text itself when
   * it contains `{%` or `{{`.
   */
  readonly chatTemplate?: string;
  /**
   * `INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT`: how the chat template reads
   * `message.content`, as vLLM's `--chat-template-content-format`: `auto`
   * (detected from the template, as vLLM detects it), `string` or `openai`
   * (a list of parts).
   *
   * @default "auto"
   */
  readonly chatTemplateContentFormat?: "auto" | "string" | "openai";
  /** `INCONTEXT_TOKENIZER_SHA256`: the expected SHA-256 of `tokenizer.json`, 64 hex characters. */
  readonly tokenizerSha256?: string;
  /**
   * `INCONTEXT_VLLM_VERSION`: the vLLM release mirrored (such as `0.16.0`)
   * where releases differ: the local backend's preprocessing; the vllm
   * backend reads it from the server's `GET /version` when unset.
   */
  readonly vllmVersion?: string;
  /**
   * `INCONTEXT_VLLM_TOKENIZER_MODE`: the `local` backend's tokenizer mode, as
   * vLLM's `--tokenizer-mode` (lower-cased); unset, `auto`, resolved from
   * the model folder as vLLM resolves it.
   */
  readonly vllmTokenizerMode?: string;
  /**
   * `INCONTEXT_FALLBACK_MARGIN_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS`):
   * subtracted when only an estimate is available.
   *
   * @default 1024
   */
  readonly fallbackMarginTokens: number;
  /**
   * `INCONTEXT_COMPRESSION_WINDOW_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS`):
   * the window W; unset means the host supplies it.
   */
  readonly compressionWindowTokens?: number;
  /**
   * `INCONTEXT_MIN_OUTPUT_TOKENS` (legacy `HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS`): the
   * smallest output worth sending a request for.
   *
   * @default 4096
   */
  readonly minOutputTokens: number;
  /** `INCONTEXT_CONTEXT_LENGTH`: the served context length, in tokens. */
  readonly contextLength?: number;
  /**
   * `INCONTEXT_BUDGET_MODEL` (alias `INCONTEXT_MODEL`): the only model whose
   * requests the proxy server budgets; requests for other models pass
   * untouched. Unset, every request is budgeted.
   */
  readonly model?: string;
  /**
   * `INCONTEXT_COUNT_MODEL`: the model the `anthropic` and `gemini` backends
   * count for when a request names none.
   */
  readonly countModel?: string;
  /**
   * `INCONTEXT_HERMES_CONFIG`: the path of a Hermes `config.yaml`. The proxy
   * budgets its `model.default`, and asks the installed Hermes for the window
   * W when `INCONTEXT_COMPRESSION_WINDOW_TOKENS` is unset (see the `./hermes`
   * entry). Only the path is checked here.
   */
  readonly hermesConfig?: string;
  /**
   * `INCONTEXT_HERMES_PYTHON`: the Python interpreter that runs Hermes, asked
   * for the window when `INCONTEXT_HERMES_CONFIG` is set.
   *
   * @default the interpreter named by the `hermes` executable on PATH, else `python3`
   */
  readonly hermesPython?: string;
  /**
   * `INCONTEXT_HERMES_RELEASE`: `2026-07` (Hermes 0.18.x), `0.19` (Hermes
   * 0.19.x) or `2026-09`, the Hermes release whose threshold arithmetic to
   * mirror instead of asking Hermes, for a proxy that runs where Hermes is
   * not installed.
   */
  readonly hermesRelease?: "2026-07" | "0.19" | "2026-09";
  /**
   * `INCONTEXT_HERMES_MODELS`: comma-separated models budgeted besides
   * Hermes' `model.default`, each with its own window from Hermes.
   *
   * @default []
   */
  readonly hermesModels?: readonly string[];
  /**
   * `INCONTEXT_BACKEND_MODULES`: comma-separated `jsr:`, `npm:` or `file:`
   * modules that register backends.
   *
   * @default []
   */
  readonly backendModules: readonly string[];
  /**
   * `INCONTEXT_CACHE_ENTRIES`: how many exact counts the cache keeps.
   *
   * @default 4096
   */
  readonly cacheEntries: number;
  /** `INCONTEXT_UPSTREAM_URL`: the proxy's upstream server root, an http(s) URL. */
  readonly upstreamUrl?: string;
  /**
   * `INCONTEXT_LISTEN`: where the proxy listens, `HOST:PORT` (`[::1]:PORT` for IPv6).
   *
   * @default "127.0.0.1:8787"
   */
  readonly listen: string;
  /**
   * `INCONTEXT_ON_EXHAUSTED`: what the proxy does when less than the minimum
   * output is left: `clamp`, `reject` or `unchanged`.
   *
   * @default "clamp"
   */
  readonly onExhausted: "clamp" | "reject" | "unchanged";
  /**
   * `INCONTEXT_ANCHOR_ENTRIES`: how many conversations' usage anchors the proxy keeps.
   *
   * @default 4096
   */
  readonly anchorEntries: number;
  /**
   * `INCONTEXT_ANCHOR_TOLERANCE`: the fraction (`0.02`) or percentage (`2%`)
   * by which an exact count may differ from the usage anchor before it is
   * logged and counted.
   *
   * @default 0.02
   */
  readonly anchorTolerance: number;
  /**
   * `INCONTEXT_MAX_REQUEST_BYTES`: request bodies above this size get a 413.
   *
   * @default 33554432 (32 MiB)
   */
  readonly maxRequestBytes: number;
  /**
   * `INCONTEXT_MAX_HEADER_BYTES`: the largest request head (request line
   * and header fields) the server reads; a larger one gets a 431.
   *
   * @default 65536 (64 KiB)
   */
  readonly maxHeaderBytes: number;
  /**
   * `INCONTEXT_UPSTREAM_TIMEOUT_SECONDS`: how long the upstream may take to
   * send its response headers before the proxy answers 504. A non-streamed
   * generation sends them only once it is complete, so this bounds the
   * longest non-streamed generation.
   *
   * @default 600
   */
  readonly upstreamTimeoutSeconds: number;
  /**
   * `INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS`: how long a response body may
   * wait for the upstream's next bytes before the proxy ends the stream.
   *
   * @default 600
   */
  readonly upstreamIdleTimeoutSeconds: number;
  /**
   * `INCONTEXT_SHUTDOWN_GRACE_SECONDS`: how long the proxy server lets
   * requests in flight finish after SIGTERM, SIGINT or SIGHUP before it
   * ends them.
   *
   * @default 30
   */
  readonly shutdownGraceSeconds: number;
  /**
   * `INCONTEXT_SHARED_STORE`: a Redis or Valkey URL (`redis://HOST:PORT/DB`,
   * `rediss://` for TLS) whose store the proxy server's replicas share usage
   * anchors and count-cache entries through. Unset, each process keeps its
   * own. A secret when it holds a password: never echoed in errors or logs.
   */
  readonly sharedStore?: string;
  /**
   * `INCONTEXT_SHARED_STORE_CA`: a PEM file of the certificate authorities a
   * `rediss://` store's certificate is checked against, for a store whose
   * certificate no public authority signed. Unset, the runtime's own.
   */
  readonly sharedStoreCa?: string;
  /**
   * `INCONTEXT_SHARED_STORE_SECRET`: a secret the replicas share (at least
   * 32 characters, such as `openssl rand -hex 32`): every shared record is
   * signed with it and checked before use, so that whoever can write to
   * the store cannot make a replica refuse or shrink a request. Unset,
   * records are trusted as the store holds them. Never echoed or logged.
   */
  readonly sharedStoreSecret?: string;
  /**
   * `INCONTEXT_SHARED_TTL_SECONDS`: how long a shared record lives in the store.
   *
   * @default 86400
   */
  readonly sharedTtlSeconds: number;
  /**
   * `INCONTEXT_SHARED_TIMEOUT_MS`: the deadline of one call to the shared
   * store; a call past it is abandoned and the request goes on from the
   * process's own layer.
   *
   * @default 5
   */
  readonly sharedTimeoutMs: number;
  /**
   * `INCONTEXT_HEADERS_TIMEOUT_SECONDS`: how long a client may take to send
   * a request's head; then the connection is closed (408).
   *
   * @default 30
   */
  readonly headersTimeoutSeconds: number;
  /**
   * `INCONTEXT_REQUEST_TIMEOUT_SECONDS`: how long a client may take to send
   * a whole request, head and body; then the connection is closed (408).
   *
   * @default 300
   */
  readonly requestTimeoutSeconds: number;
  /**
   * `INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS`: how long an idle keep-alive
   * connection stays open between requests.
   *
   * @default 75
   */
  readonly keepAliveTimeoutSeconds: number;
  /**
   * `INCONTEXT_MAX_CONNECTIONS`: the most client connections open at once;
   * a connection beyond it is closed as soon as it is accepted. Keep it
   * well below the process's open-file limit (`ulimit -n`).
   *
   * @default 512
   */
  readonly maxConnections: number;
  /**
   * `INCONTEXT_ADMIN_TOKEN`: when set, `/incontext/metrics` and
   * `/incontext/context` answer only requests bearing it
   * (`Authorization: Bearer <token>`); `/incontext/healthz` stays open.
   */
  readonly adminToken?: string;
  /**
   * `INCONTEXT_CONTEXT_ENDPOINT`: `on` serves `/incontext/context` (the
   * recent decisions, with their model names), `off` answers 404.
   *
   * @default true
   */
  readonly contextEndpoint: boolean;
  /**
   * `INCONTEXT_LOG_LEVEL`: the lowest level the command line logs: `debug`,
   * `info`, `warning` or `error`.
   *
   * @default "info"
   */
  readonly logLevel: "debug" | "info" | "warning" | "error";
  /**
   * `INCONTEXT_LOG_FORMAT`: how the command line writes log records: `text`
   * lines or `json` lines.
   *
   * @default "text"
   */
  readonly logFormat: "text" | "json";
}

/** Where a setting is read from: its variable, then the original plugin's legacy alias. */
export interface ConfigVariable {
  readonly name: string;
  readonly alias?: string;
}

/** The variable of every setting. */
export const CONFIG_VARIABLES: {
  readonly [K in keyof Config]-?: ConfigVariable;
} = {
  backend: {
    name: "INCONTEXT_BACKEND",
    alias: "HERMES_DYNAMIC_BUDGET_BACKEND",
  },
  backendFallbacks: {
    name: "INCONTEXT_BACKEND",
    alias: "HERMES_DYNAMIC_BUDGET_BACKEND",
  },
  backendFallbackTurns: { name: "INCONTEXT_BACKEND_FALLBACK_TURNS" },
  tokenizerUrl: {
    name: "INCONTEXT_TOKENIZER_URL",
    alias: "HERMES_VLLM_TOKENIZER_URL",
  },
  tokenizerTimeoutSeconds: {
    name: "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
    alias: "HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS",
  },
  tokenizerUserAgent: {
    name: "INCONTEXT_TOKENIZER_USER_AGENT",
    alias: "HERMES_VLLM_TOKENIZER_USER_AGENT",
  },
  tokenizerApiKey: { name: "INCONTEXT_TOKENIZER_API_KEY" },
  anthropicApiKey: { name: "INCONTEXT_ANTHROPIC_API_KEY" },
  geminiApiKey: { name: "INCONTEXT_GEMINI_API_KEY" },
  openaiApiKey: { name: "INCONTEXT_OPENAI_API_KEY" },
  tokenizerDir: { name: "INCONTEXT_TOKENIZER_DIR" },
  chatTemplate: { name: "INCONTEXT_CHAT_TEMPLATE" },
  chatTemplateContentFormat: { name: "INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT" },
  tokenizerSha256: { name: "INCONTEXT_TOKENIZER_SHA256" },
  vllmVersion: { name: "INCONTEXT_VLLM_VERSION" },
  vllmTokenizerMode: { name: "INCONTEXT_VLLM_TOKENIZER_MODE" },
  fallbackMarginTokens: {
    name: "INCONTEXT_FALLBACK_MARGIN_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS",
  },
  compressionWindowTokens: {
    name: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
  },
  minOutputTokens: {
    name: "INCONTEXT_MIN_OUTPUT_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
  },
  contextLength: { name: "INCONTEXT_CONTEXT_LENGTH" },
  model: { name: "INCONTEXT_BUDGET_MODEL", alias: "INCONTEXT_MODEL" },
  countModel: { name: "INCONTEXT_COUNT_MODEL" },
  hermesConfig: { name: "INCONTEXT_HERMES_CONFIG" },
  hermesPython: { name: "INCONTEXT_HERMES_PYTHON" },
  hermesRelease: { name: "INCONTEXT_HERMES_RELEASE" },
  hermesModels: { name: "INCONTEXT_HERMES_MODELS" },
  upstreamUrl: { name: "INCONTEXT_UPSTREAM_URL" },
  listen: { name: "INCONTEXT_LISTEN" },
  onExhausted: { name: "INCONTEXT_ON_EXHAUSTED" },
  anchorEntries: { name: "INCONTEXT_ANCHOR_ENTRIES" },
  anchorTolerance: { name: "INCONTEXT_ANCHOR_TOLERANCE" },
  maxRequestBytes: { name: "INCONTEXT_MAX_REQUEST_BYTES" },
  maxHeaderBytes: { name: "INCONTEXT_MAX_HEADER_BYTES" },
  upstreamTimeoutSeconds: { name: "INCONTEXT_UPSTREAM_TIMEOUT_SECONDS" },
  upstreamIdleTimeoutSeconds: {
    name: "INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS",
  },
  shutdownGraceSeconds: { name: "INCONTEXT_SHUTDOWN_GRACE_SECONDS" },
  headersTimeoutSeconds: { name: "INCONTEXT_HEADERS_TIMEOUT_SECONDS" },
  requestTimeoutSeconds: { name: "INCONTEXT_REQUEST_TIMEOUT_SECONDS" },
  keepAliveTimeoutSeconds: { name: "INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS" },
  maxConnections: { name: "INCONTEXT_MAX_CONNECTIONS" },
  adminToken: { name: "INCONTEXT_ADMIN_TOKEN" },
  contextEndpoint: { name: "INCONTEXT_CONTEXT_ENDPOINT" },
  logLevel: { name: "INCONTEXT_LOG_LEVEL" },
  logFormat: { name: "INCONTEXT_LOG_FORMAT" },
  backendModules: { name: "INCONTEXT_BACKEND_MODULES" },
  cacheEntries: { name: "INCONTEXT_CACHE_ENTRIES" },
  sharedStore: { name: "INCONTEXT_SHARED_STORE" },
  sharedStoreCa: { name: "INCONTEXT_SHARED_STORE_CA" },
  sharedStoreSecret: { name: "INCONTEXT_SHARED_STORE_SECRET" },
  sharedTtlSeconds: { name: "INCONTEXT_SHARED_TTL_SECONDS" },
  sharedTimeoutMs: { name: "INCONTEXT_SHARED_TIMEOUT_MS" },
};

/**
 * The configuration with every default and nothing from the environment: what
 * `loadConfig({})` yields before validation, and what a backend factory gets
 * when `backends.load()` is called without a configuration.
 */
export const DEFAULT_CONFIG: Config = Object.freeze({
  backend: "vllm",
  tokenizerTimeoutSeconds: 30,
  tokenizerUserAgent: `incontext/${VERSION}`,
  fallbackMarginTokens: 1024,
  minOutputTokens: 4096,
  backendModules: Object.freeze([]) as readonly string[],
  cacheEntries: 4096,
  listen: "127.0.0.1:8787",
  onExhausted: "clamp",
  anchorEntries: 4096,
  anchorTolerance: 0.02,
  maxRequestBytes: 32 * 1024 * 1024,
  maxHeaderBytes: 64 * 1024,
  upstreamTimeoutSeconds: 600,
  upstreamIdleTimeoutSeconds: 600,
  shutdownGraceSeconds: 30,
  sharedTtlSeconds: 86400,
  sharedTimeoutMs: 5,
  headersTimeoutSeconds: 30,
  requestTimeoutSeconds: 300,
  keepAliveTimeoutSeconds: 75,
  maxConnections: 512,
  contextEndpoint: true,
  logLevel: "info",
  logFormat: "text",
});
