/**
 * Every variable the proxy server reads, with its default as the tables of
 * docs/configuration.md state it: `--help` prints this list, and a test
 * holds those tables and the configuration's own list to it.
 *
 * @module
 */

/** One documented variable. */
export interface VariableDoc {
  readonly name: string;
  /** The default in words, as docs/configuration.md has it (`none` when unset). */
  readonly default: string;
  /** What it means, in a few words. */
  readonly meaning: string;
  /** Another name read for the same setting; the main name wins. */
  readonly alias?: string;
}

/** The variables, in the order of docs/configuration.md. */
export const VARIABLES: readonly VariableDoc[] = [
  {
    name: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS",
    default: "none (from host)",
    meaning: "W, the compression window",
  },
  {
    name: "INCONTEXT_MIN_OUTPUT_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_MIN_OUTPUT_TOKENS",
    default: "4096",
    meaning: "R, the smallest output worth sending a request for",
  },
  {
    name: "INCONTEXT_FALLBACK_MARGIN_TOKENS",
    alias: "HERMES_DYNAMIC_BUDGET_FALLBACK_MARGIN_TOKENS",
    default: "1024",
    meaning: "F, kept free when only an estimate is available",
  },
  {
    name: "INCONTEXT_BACKEND",
    alias: "HERMES_DYNAMIC_BUDGET_BACKEND",
    default: "vllm",
    meaning:
      "the backend's name, or a chain such as local,vllm; unset: see configuration.md",
  },
  {
    name: "INCONTEXT_TOKENIZER_URL",
    alias: "HERMES_VLLM_TOKENIZER_URL",
    default: "none",
    meaning: "vllm: the /tokenize URL; others: the count server's base URL",
  },
  {
    name: "INCONTEXT_TOKENIZER_TIMEOUT_SECONDS",
    alias: "HERMES_VLLM_TOKENIZER_TIMEOUT_SECONDS",
    default: "30",
    meaning: "how long one count may take",
  },
  {
    name: "INCONTEXT_TOKENIZER_USER_AGENT",
    alias: "HERMES_VLLM_TOKENIZER_USER_AGENT",
    default: "incontext/VERSION",
    meaning: "the User-Agent of count requests",
  },
  {
    name: "INCONTEXT_CONTEXT_LENGTH",
    default: "none",
    meaning: "C, the served context length (vLLM --max-model-len)",
  },
  {
    name: "INCONTEXT_BUDGET_MODEL",
    alias: "INCONTEXT_MODEL",
    default: "none",
    meaning: "the only model the proxy server budgets; unset, every one",
  },
  {
    name: "INCONTEXT_COUNT_MODEL",
    default: "none",
    meaning:
      "the model anthropic and gemini count for when a request names none",
  },
  {
    name: "INCONTEXT_HERMES_CONFIG",
    default: "none",
    meaning: "a Hermes config.yaml: W and C from the installed Hermes",
  },
  {
    name: "INCONTEXT_HERMES_PYTHON",
    default: "the hermes executable's, else python3",
    meaning: "the Python that runs Hermes",
  },
  {
    name: "INCONTEXT_HERMES_RELEASE",
    default: "none",
    meaning: "without Hermes installed: mirror 2026-07 (0.18), 0.19 or 2026-09",
  },
  {
    name: "INCONTEXT_HERMES_MODELS",
    default: "none",
    meaning: "models budgeted besides model.default, each with its own W",
  },
  {
    name: "INCONTEXT_TOKENIZER_API_KEY",
    default: "none",
    meaning: "a bearer token for a self-hosted count endpoint",
  },
  {
    name: "INCONTEXT_ANTHROPIC_API_KEY",
    default: "none",
    meaning: "anthropic's x-api-key",
  },
  {
    name: "INCONTEXT_GEMINI_API_KEY",
    default: "none",
    meaning: "gemini's x-goog-api-key",
  },
  {
    name: "INCONTEXT_OPENAI_API_KEY",
    default: "none",
    meaning: "openai's bearer token",
  },
  {
    name: "INCONTEXT_TOKENIZER_DIR",
    default: "none",
    meaning: "the served model folder (local, sglang)",
  },
  {
    name: "INCONTEXT_CHAT_TEMPLATE",
    default: "the folder's",
    meaning: "a template file, or the template itself",
  },
  {
    name: "INCONTEXT_CHAT_TEMPLATE_CONTENT_FORMAT",
    default: "auto",
    meaning: "auto, string or openai, as vLLM's --chat-template-content-format",
  },
  {
    name: "INCONTEXT_TOKENIZER_SHA256",
    default: "none",
    meaning: "the expected SHA-256 of tokenizer.json",
  },
  {
    name: "INCONTEXT_VLLM_VERSION",
    default: "0.20.0",
    meaning: "the vLLM release local mirrors; unset, vllm asks GET /version",
  },
  {
    name: "INCONTEXT_VLLM_TOKENIZER_MODE",
    default: "auto",
    meaning: "local's vLLM --tokenizer-mode (hf, deepseek_v32, deepseek_v4)",
  },
  {
    name: "INCONTEXT_BACKEND_MODULES",
    default: "none",
    meaning: "jsr:, npm: or file: modules that register backends",
  },
  {
    name: "INCONTEXT_BACKEND_FALLBACK_TURNS",
    default: "none (until restart)",
    meaning:
      "verified counts a model makes on a later backend of the chain, then the first again",
  },
  {
    name: "INCONTEXT_CACHE_ENTRIES",
    default: "4096",
    meaning: "exact counts the count cache keeps",
  },
  {
    name: "INCONTEXT_UPSTREAM_URL",
    default: "none (required)",
    meaning: "the upstream server root",
  },
  {
    name: "INCONTEXT_LISTEN",
    default: "127.0.0.1:8787",
    meaning: "where the proxy listens, HOST:PORT",
  },
  {
    name: "INCONTEXT_ON_EXHAUSTED",
    default: "clamp",
    meaning: "less than R left: clamp, reject or unchanged",
  },
  {
    name: "INCONTEXT_ANCHOR_ENTRIES",
    default: "4096",
    meaning: "conversations whose usage anchors are kept",
  },
  {
    name: "INCONTEXT_ANCHOR_TOLERANCE",
    default: "0.02",
    meaning: "how far a count may differ from its anchor before it is logged",
  },
  {
    name: "INCONTEXT_MAX_REQUEST_BYTES",
    default: "33554432",
    meaning: "larger request bodies get a 413",
  },
  {
    name: "INCONTEXT_MAX_HEADER_BYTES",
    default: "65536",
    meaning: "larger request heads get a 431",
  },
  {
    name: "INCONTEXT_UPSTREAM_TIMEOUT_SECONDS",
    default: "600",
    meaning: "time to the upstream's response headers, then 504",
  },
  {
    name: "INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS",
    default: "600",
    meaning: "longest wait for the upstream's next body bytes",
  },
  {
    name: "INCONTEXT_SHUTDOWN_GRACE_SECONDS",
    default: "30",
    meaning: "after SIGTERM, time for requests in flight",
  },
  {
    name: "INCONTEXT_HEADERS_TIMEOUT_SECONDS",
    default: "30",
    meaning: "time a client has to send a request's head",
  },
  {
    name: "INCONTEXT_REQUEST_TIMEOUT_SECONDS",
    default: "300",
    meaning: "time a client has to send a whole request",
  },
  {
    name: "INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS",
    default: "75",
    meaning: "how long an idle keep-alive connection stays open",
  },
  {
    name: "INCONTEXT_MAX_CONNECTIONS",
    default: "512",
    meaning: "connections open at once; keep well below ulimit -n",
  },
  {
    name: "INCONTEXT_ADMIN_TOKEN",
    default: "none",
    meaning: "token /incontext/metrics, /context and the page then need",
  },
  {
    name: "INCONTEXT_CONTEXT_ENDPOINT",
    default: "on",
    meaning: "off answers 404 on /incontext/context",
  },
  {
    name: "INCONTEXT_SHARED_STORE",
    default: "none",
    meaning: "redis:// or rediss:// URL replicas share anchors and counts in",
  },
  {
    name: "INCONTEXT_SHARED_STORE_CA",
    default: "none",
    meaning:
      "PEM file of the CAs a rediss:// store's certificate is checked against",
  },
  {
    name: "INCONTEXT_SHARED_STORE_SECRET",
    default: "none",
    meaning: "secret replicas sign and check every shared record with",
  },
  {
    name: "INCONTEXT_SHARED_TTL_SECONDS",
    default: "86400",
    meaning: "how long a shared record lives",
  },
  {
    name: "INCONTEXT_SHARED_TIMEOUT_MS",
    default: "5",
    meaning: "deadline of one shared-store call, then the local layer",
  },
  {
    name: "INCONTEXT_LOG_LEVEL",
    default: "info",
    meaning: "the lowest level logged: debug, info, warning or error",
  },
  {
    name: "INCONTEXT_LOG_FORMAT",
    default: "text",
    meaning: "log records as text lines or json lines",
  },
];

/** The variables as `--help` lists them: name, default, meaning, alias. */
export function variablesHelp(): string {
  const width = Math.max(...VARIABLES.map((v) => v.name.length));
  return VARIABLES.map((v) =>
    `  ${v.name.padEnd(width)}  ${v.meaning}; default: ${v.default}${
      v.alias === undefined ? "" : ` (alias ${v.alias})`
    }`
  ).join("\n");
}
