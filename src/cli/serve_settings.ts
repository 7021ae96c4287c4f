/**
 * The proxy's command line: flags override the environment, which
 * `loadConfig()` validates; the window may come from a Hermes config.yaml.
 * Every bad setting is reported in one `ConfigError`.
 */
import { parseArgs } from "node:util";
import { type Config, loadConfig } from "../config/mod.ts";
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";
import { loadHermesSettings, resolveWindow } from "../bridges/hermes/mod.ts";

/** Flag name -> the variable it overrides. */
const FLAGS: Record<string, string> = {
  upstream: "INCONTEXT_UPSTREAM_URL",
  listen: "INCONTEXT_LISTEN",
  window: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
  "context-length": "INCONTEXT_CONTEXT_LENGTH",
  model: "INCONTEXT_MODEL",
  "hermes-config": "INCONTEXT_HERMES_CONFIG",
  "on-exhausted": "INCONTEXT_ON_EXHAUSTED",
  "tokenizer-url": "INCONTEXT_TOKENIZER_URL",
  backend: "INCONTEXT_BACKEND",
};

export const HELP =
  `incontext proxy: exact output budgets in front of an OpenAI-compatible server

Usage:
  incontext serve [flags]

Flags (each overrides its environment variable):
  --upstream URL          INCONTEXT_UPSTREAM_URL   upstream server root (required), e.g. http://127.0.0.1:8000
  --listen HOST:PORT      INCONTEXT_LISTEN         default 127.0.0.1:8787
  --window N              INCONTEXT_COMPRESSION_WINDOW_TOKENS   compression window W
  --context-length N      INCONTEXT_CONTEXT_LENGTH served context length (vLLM --max-model-len)
  --model NAME            INCONTEXT_MODEL          budget only this model's requests
  --hermes-config PATH    INCONTEXT_HERMES_CONFIG  take W (and the context length) from Hermes' config.yaml
  --on-exhausted POLICY   INCONTEXT_ON_EXHAUSTED   clamp (default), reject or unchanged
  --tokenizer-url URL     INCONTEXT_TOKENIZER_URL  vllm: the /tokenize URL; llamacpp, tgi, sglang (required),
                                                   anthropic, gemini, openai: the server's base URL
  --backend NAME          INCONTEXT_BACKEND        vllm (default), llamacpp, tgi, sglang, anthropic, gemini,
                                                   openai, local, or anchored: no count endpoint (Ollama,
                                                   hosted gateways), counts from the last response's usage
  --help                  print this help

Other variables:
  INCONTEXT_TOKENIZER_API_KEY, INCONTEXT_ANTHROPIC_API_KEY, INCONTEXT_GEMINI_API_KEY, INCONTEXT_OPENAI_API_KEY,
  INCONTEXT_TOKENIZER_DIR (local, sglang), INCONTEXT_CHAT_TEMPLATE,
  INCONTEXT_TOKENIZER_SHA256 (local: checked at start-up, a mismatch exits with 1),
  INCONTEXT_TOKENIZER_TIMEOUT_SECONDS (30), INCONTEXT_TOKENIZER_USER_AGENT,
  INCONTEXT_FALLBACK_MARGIN_TOKENS (1024), INCONTEXT_MIN_OUTPUT_TOKENS (4096), INCONTEXT_BACKEND_MODULES,
  INCONTEXT_CACHE_ENTRIES (4096), INCONTEXT_ANCHOR_ENTRIES (4096), INCONTEXT_ANCHOR_TOLERANCE (2%),
  INCONTEXT_MAX_REQUEST_BYTES (33554432), INCONTEXT_UPSTREAM_TIMEOUT_SECONDS (600: time to response headers),
  INCONTEXT_UPSTREAM_IDLE_TIMEOUT_SECONDS (600: longest wait for the next body bytes),
  INCONTEXT_SHUTDOWN_GRACE_SECONDS (30: after SIGTERM, time for requests in flight),
  INCONTEXT_HEADERS_TIMEOUT_SECONDS (30: time to send a request head), INCONTEXT_REQUEST_TIMEOUT_SECONDS
  (300: time to send a whole request), INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS (75: idle connection lifetime),
  INCONTEXT_MAX_CONNECTIONS (512: connections open at once; keep well below ulimit -n),
  INCONTEXT_ADMIN_TOKEN (none: when set, /incontext/metrics and /incontext/context need it as a bearer token),
  INCONTEXT_CONTEXT_ENDPOINT (on: off answers 404 on /incontext/context); legacy HERMES_* aliases
  as in the README.

Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses are budgeted; every other path is
forwarded; GET /incontext/healthz, /incontext/metrics, /incontext/context.`;

/** What the server needs, resolved from flags, environment and Hermes. */
export interface ServerSettings {
  readonly config: Config;
  readonly upstream: string;
  readonly hostname: string;
  readonly port: number;
  readonly window: number;
  readonly contextLength: number;
}

/**
 * Resolves the server's settings, or `"help"` for `--help`.
 *
 * @throws {ConfigError} Listing every bad flag or variable.
 */
export async function resolveServerSettings(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<ServerSettings | "help"> {
  const flags = parseFlags(args);
  if (flags === "help") return "help";
  const merged = { ...env };
  for (const [flag, value] of Object.entries(flags)) {
    merged[FLAGS[flag]!] = value;
  }
  const named = (issue: ConfigIssue): ConfigIssue => {
    const flag = Object.keys(flags).find((f) => FLAGS[f] === issue.variable);
    return flag
      ? { ...issue, variable: `--${flag} (${issue.variable})` }
      : issue;
  };
  let config: Config;
  try {
    config = loadConfig(merged);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new ConfigError([...error.issues.map(named), ...missing(merged)]);
    }
    throw error;
  }
  const issues: ConfigIssue[] = missing(merged);
  const settings = config.hermesConfig === undefined
    ? undefined
    : await gather(issues, () => loadHermesSettings(config.hermesConfig!));
  const window = await gather(issues, () => resolveWindow(config, settings));
  const contextLength = config.contextLength ?? settings?.model.contextLength;
  if (contextLength === undefined) {
    issues.push({
      variable: "INCONTEXT_CONTEXT_LENGTH",
      rule: "is required (or model.context_length in the Hermes config)",
    });
  }
  if (
    issues.length > 0 || window === undefined || contextLength === undefined
  ) {
    throw new ConfigError(issues.map(named));
  }
  const [hostname, port] = splitListen(config.listen);
  return {
    config,
    upstream: config.upstreamUrl!,
    hostname,
    port,
    window,
    contextLength,
  };
}

function parseFlags(args: readonly string[]): Record<string, string> | "help" {
  const options: Record<string, { type: "string" }> = {};
  for (const flag of Object.keys(FLAGS)) options[flag] = { type: "string" };
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...options, help: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    const rule = error instanceof Error
      ? error.message.split("\n")[0]!
      : "invalid";
    throw new ConfigError([{ variable: "command line", rule }]);
  }
  if (parsed.values.help) return "help";
  const flags: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    if (typeof value === "string") flags[name] = value;
  }
  return flags;
}

function missing(env: Record<string, string | undefined>): ConfigIssue[] {
  return env.INCONTEXT_UPSTREAM_URL === undefined
    ? [{
      variable: "INCONTEXT_UPSTREAM_URL",
      rule: "is required (or --upstream)",
    }]
    : [];
}

async function gather<T>(
  issues: ConfigIssue[],
  step: () => T | Promise<T>,
): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    issues.push(...error.issues);
    return undefined;
  }
}

function splitListen(listen: string): [string, number] {
  const at = listen.lastIndexOf(":");
  return [
    listen.slice(0, at).replace(/^\[(.*)\]$/, "$1"),
    Number(listen.slice(at + 1)),
  ];
}
