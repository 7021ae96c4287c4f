/**
 * The proxy's command line, as `serve`, `check` and `count` read it: flags
 * override the environment, which `loadConfig()` validates; the window may
 * come from a Hermes config.yaml. Every bad setting is reported in one
 * `ConfigError`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { type Config, loadConfig } from "../../config/mod.ts";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import {
  type HermesSettings,
  loadHermesSettings,
  resolveWindow,
} from "../../bridges/hermes/mod.ts";
import { variablesHelp } from "./variables.ts";
import {
  type HermesBudget,
  hermesBudget,
} from "../../bridges/hermes/budget.ts";
import { unknownBackends } from "./backend_chain.ts";

/** Flag name -> the variable it overrides. */
const FLAGS: Record<string, string> = {
  upstream: "INCONTEXT_UPSTREAM_URL",
  listen: "INCONTEXT_LISTEN",
  window: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
  "context-length": "INCONTEXT_CONTEXT_LENGTH",
  model: "INCONTEXT_BUDGET_MODEL",
  "hermes-config": "INCONTEXT_HERMES_CONFIG",
  "hermes-python": "INCONTEXT_HERMES_PYTHON",
  "hermes-release": "INCONTEXT_HERMES_RELEASE",
  "hermes-models": "INCONTEXT_HERMES_MODELS",
  "on-exhausted": "INCONTEXT_ON_EXHAUSTED",
  "tokenizer-url": "INCONTEXT_TOKENIZER_URL",
  backend: "INCONTEXT_BACKEND",
};

/** The help of `incontext serve`: its flags, every variable, its endpoints. */
export const HELP: string =
  `incontext proxy: exact output budgets in front of an OpenAI-compatible server

Usage:
  incontext serve [flags]

Flags (each overrides its environment variable):
  --upstream URL          INCONTEXT_UPSTREAM_URL   upstream server root (required), e.g. http://127.0.0.1:8000
  --listen HOST:PORT      INCONTEXT_LISTEN         default 127.0.0.1:8787
  --window N              INCONTEXT_COMPRESSION_WINDOW_TOKENS   compression window W
  --context-length N      INCONTEXT_CONTEXT_LENGTH served context length (vLLM --max-model-len)
  --model NAME            INCONTEXT_BUDGET_MODEL   budget only this model's requests (alias INCONTEXT_MODEL)
  --hermes-config PATH    INCONTEXT_HERMES_CONFIG  Hermes' config.yaml: W from the installed Hermes, budgeting its model.default
  --hermes-python PATH    INCONTEXT_HERMES_PYTHON  the Python that runs Hermes (default: the hermes executable's, else python3)
  --hermes-release R      INCONTEXT_HERMES_RELEASE without Hermes installed: mirror release 2026-07 (0.18), 0.19 or 2026-09
  --hermes-models A,B     INCONTEXT_HERMES_MODELS  more models to budget, each with its own W from Hermes
  --on-exhausted POLICY   INCONTEXT_ON_EXHAUSTED   clamp (default), reject or unchanged
  --tokenizer-url URL     INCONTEXT_TOKENIZER_URL  vllm: the /tokenize URL; llamacpp, tgi, sglang (required),
                                                   anthropic, gemini, openai: the server's base URL
  --backend NAME          INCONTEXT_BACKEND        vllm (default), llamacpp, tgi, sglang, anthropic, gemini,
                                                   openai, local, or anchored: no count endpoint (Ollama,
                                                   hosted gateways), counts from the last response's usage;
                                                   or a chain such as local,vllm (the next counts a model
                                                   whose count a response's usage contradicts)
  --help                  print this help

Variables (a flag above wins over its variable):
${variablesHelp()}

Signals: SIGTERM, SIGINT and SIGHUP stop accepting connections; requests in flight get
INCONTEXT_SHUTDOWN_GRACE_SECONDS to finish. SIGHUP reloads nothing: restart to apply new settings.

Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses are budgeted; every other path is
forwarded; GET /incontext/ (a status page), /incontext/livez, /incontext/readyz (alias /incontext/healthz),
/incontext/metrics, /incontext/context.`;

/** What the server needs, resolved from flags, environment and Hermes. */
export interface ServerSettings {
  readonly config: Config;
  /** The upstream root; always set for `serve`, optional for `check` and `count`. */
  readonly upstream?: string;
  readonly hostname: string;
  readonly port: number;
  readonly window: number;
  /** Where the window came from: a flag, a variable or the Hermes config. */
  readonly windowSource: string;
  readonly contextLength: number;
  /** Where the context length came from: a flag, a variable or the Hermes config. */
  readonly contextLengthSource: string;
  /**
   * How to name a variable in an error: `--flag (VARIABLE)` when a flag set
   * it, else the variable.
   */
  readonly nameOf: (variable: string) => string;
  /** The window and routes a Hermes config gives, when one is named. */
  readonly hermes?: HermesBudget;
  /** The flag or variable that named the backends; absent when the tokenizer settings chose them. */
  readonly backendSource?: string;
}

/** Options for {@linkcode resolveServerSettings}. */
export interface ResolveServerOptions {
  /**
   * Whether an upstream URL is required (`serve`); `check` and `count` work
   * without one.
   *
   * @default true
   */
  readonly requireUpstream?: boolean;
  /**
   * The backend names a configuration may select; a name outside them is
   * reported with the other issues. Unset when plugin modules may still
   * register more.
   */
  readonly knownBackends?: readonly string[];
}

/**
 * Resolves the server's settings, or `"help"` for `--help`.
 *
 * @throws {ConfigError} Listing every bad or missing flag and variable at once.
 */
export async function resolveServerSettings(
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: ResolveServerOptions = {},
): Promise<ServerSettings | "help"> {
  const flags = parseFlags(args);
  if (flags === "help") return "help";
  const sources = new Sources(flags, env);
  const issues: ConfigIssue[] = [];
  const config = readConfig(sources, options, issues);
  const hermes = await readHermes(sources, config, issues);
  const window = await readWindow(sources, { config, hermes }, issues);
  const contextLength = readContextLength(sources, { config, hermes }, issues);
  if (
    issues.length > 0 || config === undefined || window === undefined ||
    contextLength === undefined
  ) {
    await hermes.budget?.watch?.[Symbol.asyncDispose]();
    throw new ConfigError(issues.map((issue) => sources.named(issue)));
  }
  const [hostname, port] = splitListen(config.listen);
  return {
    config,
    ...(config.upstreamUrl === undefined
      ? {}
      : { upstream: config.upstreamUrl }),
    hostname,
    port,
    window,
    windowSource: windowSource(sources, { config, hermes }),
    contextLength,
    contextLengthSource: contextLengthSource(sources, { config, hermes }),
    nameOf: (variable) => sources.named({ variable, rule: "" }).variable,
    ...(sources.isSet(BACKEND) || sources.isSet(BACKEND_ALIAS)
      ? { backendSource: sources.sourceOf(BACKEND, BACKEND_ALIAS) }
      : {}),
    ...(hermes.budget === undefined ? {} : { hermes: hermes.budget }),
  };
}

/** The environment with the flags merged in, and where each value came from. */
class Sources {
  readonly #flags: Readonly<Record<string, string>>;
  readonly merged: Record<string, string | undefined>;

  constructor(
    flags: Readonly<Record<string, string>>,
    env: Record<string, string | undefined>,
  ) {
    this.#flags = flags;
    this.merged = { ...env };
    for (const [flag, value] of Object.entries(flags)) {
      this.merged[FLAGS[flag]!] = value;
    }
  }

  isSet(variable: string): boolean {
    return this.merged[variable] !== undefined;
  }

  #flagOf(variable: string): string | undefined {
    return Object.keys(this.#flags).find((flag) => FLAGS[flag] === variable);
  }

  /** The issue, as `--flag (VARIABLE)` when a flag set its variable. */
  named(issue: ConfigIssue): ConfigIssue {
    const flag = this.#flagOf(issue.variable);
    return flag
      ? { ...issue, variable: `--${flag} (${issue.variable})` }
      : issue;
  }

  /** The variable a value was read from: the primary name, else its alias. */
  readFrom(variable: string, alias?: string): string {
    const fromAlias = alias !== undefined &&
      this.merged[variable] === undefined && this.merged[alias] !== undefined;
    return fromAlias ? alias : variable;
  }

  /** Where a value came from: its flag, else the variable it was read from. */
  sourceOf(variable: string, alias?: string): string {
    const flag = this.#flagOf(variable);
    return flag === undefined ? this.readFrom(variable, alias) : `--${flag}`;
  }
}

/** The configuration, when it loads; its problems go to `issues`. */
function readConfig(
  sources: Sources,
  options: ResolveServerOptions,
  issues: ConfigIssue[],
): Config | undefined {
  const { merged } = sources;
  if ((options.requireUpstream ?? true) && !sources.isSet(UPSTREAM)) {
    issues.push({ variable: UPSTREAM, rule: "is required (or --upstream)" });
  }
  let config: Config | undefined;
  try {
    config = loadConfig(merged);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    issues.push(...error.issues);
  }
  if (options.knownBackends !== undefined) {
    issues.push(...unknownBackends({
      config,
      text: merged[BACKEND] ?? merged[BACKEND_ALIAS],
      variable: sources.readFrom(BACKEND, BACKEND_ALIAS),
      known: options.knownBackends,
    }));
  }
  return config;
}

/** A Hermes config's path, settings and budget, as far as each could be had. */
interface HermesRead {
  readonly path: string | undefined;
  readonly settings: HermesSettings | undefined;
  readonly budget: HermesBudget | undefined;
}

/** Hermes is asked only once the rest of the configuration is valid. */
async function readHermes(
  sources: Sources,
  config: Config | undefined,
  issues: ConfigIssue[],
): Promise<HermesRead> {
  const path = config?.hermesConfig ?? sources.merged[HERMES]?.trim();
  if (path === undefined || path === "") {
    return { path, settings: undefined, budget: undefined };
  }
  const settings = await gather(issues, () => loadHermesSettings(path));
  const budget = config === undefined || settings === undefined
    ? undefined
    : await gather(
      issues,
      () => hermesBudget({ config, settings, env: sources.merged }),
    );
  return { path, settings, budget };
}

interface Read {
  readonly config: Config | undefined;
  readonly hermes: HermesRead;
}

/** The compression window: the variable's, else the Hermes config's. */
async function readWindow(
  sources: Sources,
  { config, hermes }: Read,
  issues: ConfigIssue[],
): Promise<number | undefined> {
  const windowSet = sources.isSet(WINDOW) || sources.isSet(WINDOW_ALIAS);
  if (config !== undefined && hermes.path === undefined && windowSet) {
    return await gather(issues, () => resolveWindow(config));
  }
  if (!windowSet && hermes.path === undefined) {
    issues.push({
      variable: WINDOW,
      rule:
        `is unset and so is ${HERMES}: set either (or --window, --hermes-config) to give the compression window`,
    });
  }
  return hermes.budget?.window;
}

/** The context length: the variable's, else Hermes', else its config file's. */
function readContextLength(
  sources: Sources,
  { config, hermes }: Read,
  issues: ConfigIssue[],
): number | undefined {
  const contextLength = config?.contextLength ??
    hermes.budget?.contextLength ?? hermes.settings?.model.contextLength;
  if (
    contextLength === undefined && !sources.isSet(CONTEXT) &&
    (hermes.path === undefined || hermes.settings !== undefined)
  ) {
    issues.push({
      variable: CONTEXT,
      rule:
        "is required (or --context-length, or model.context_length in the Hermes config)",
    });
  }
  return contextLength;
}

/** Where the window came from, for the start-up log. */
function windowSource(
  sources: Sources,
  { config, hermes }: Read & { readonly config: Config },
): string {
  if (config.compressionWindowTokens !== undefined) {
    return sources.sourceOf(WINDOW, WINDOW_ALIAS);
  }
  return `${hermes.budget?.source ?? "Hermes"} (${sources.sourceOf(HERMES)})`;
}

/** Where the context length came from, for the start-up log. */
function contextLengthSource(
  sources: Sources,
  { config, hermes }: Read & { readonly config: Config },
): string {
  if (config.contextLength !== undefined) return sources.sourceOf(CONTEXT);
  if (hermes.budget?.contextLength !== undefined) {
    return `Hermes (${sources.sourceOf(HERMES)})`;
  }
  return `model.context_length in the Hermes config (${
    sources.sourceOf(HERMES)
  })`;
}

const UPSTREAM = "INCONTEXT_UPSTREAM_URL";
const BACKEND = "INCONTEXT_BACKEND";
const BACKEND_ALIAS = "HERMES_DYNAMIC_BUDGET_BACKEND";
const WINDOW = "INCONTEXT_COMPRESSION_WINDOW_TOKENS";
const WINDOW_ALIAS = "HERMES_DYNAMIC_BUDGET_COMPRESSION_WINDOW_TOKENS";
const CONTEXT = "INCONTEXT_CONTEXT_LENGTH";
const HERMES = "INCONTEXT_HERMES_CONFIG";

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
