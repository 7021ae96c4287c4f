/**
 * Asking the installed Hermes for its window: run the probe script in the
 * Python that runs Hermes and read its one-line JSON answer. Every failure
 * becomes a {@linkcode ConfigError} naming what failed and how to fix it;
 * nothing Python prints on stderr is repeated (it can quote config values).
 *
 * @module
 */
import { execFile } from "node:child_process";
import { basename } from "node:path";
import process from "node:process";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import { HERMES_PROBE_SCRIPT } from "./probe_script.ts";
import { findHermesPython, type HermesPython } from "./python.ts";
import { at, HERMES_VARIABLE } from "./settings.ts";

/** Where a window came from: the agent Hermes runs, or its compressor alone. */
export type HermesWindowSource = "agent" | "compressor";

/** One model's window, as Hermes computes it. */
export interface HermesModelWindow {
  /** `threshold_tokens` of Hermes' compressor, or the context length with compression disabled. */
  readonly window: number;
  /** The compressor's `context_length`. */
  readonly contextLength: number;
  /**
   * `agent`: read from `agent.context_compressor` of the `run_agent.AIAgent`
   * built for this model; `compressor`: the agent could not be built offline,
   * and Hermes' `ContextCompressor` was built the way `init_agent()` does.
   */
  readonly source: HermesWindowSource;
  /** The Hermes source file whose object answered (`run_agent.py`, or `context_compressor.py`). */
  readonly file: string;
  /**
   * Why the agent was not asked, when `source` is `compressor`: `base_url`
   * (no base URL to build it with), `network` (building it tried to open a
   * connection, which the script refuses), or the type of what it raised.
   */
  readonly fallback?: string;
  /**
   * With `source` `compressor`: whose `init_agent()` wiring built it, `0.18`,
   * or `0.19` when the compressor takes `model_thresholds` or
   * `threshold_tokens_cap`.
   */
  readonly wiring?: string;
  /**
   * With `source` `agent`: how many connections the agent tried after its
   * compressor was built (the script refuses every one), e.g. Hermes'
   * Ollama detection for a local base URL.
   */
  readonly refused?: number;
  /**
   * The window through Hermes' own threshold function
   * (`ContextCompressor._compute_threshold_tokens`, then its
   * `threshold_tokens` cap), when this Hermes has it.
   */
  readonly selfCheck?: number;
}

/** What the installed Hermes answered. */
export interface HermesAnswer extends HermesModelWindow {
  /** Hermes' version, e.g. `0.19.0`. */
  readonly hermesVersion: string;
  /** Where the version came from: the `hermes-agent` distribution metadata, or `hermes_cli.__version__`. */
  readonly versionSource: string;
  /** The model Hermes uses (`model.default`). */
  readonly model: string;
  /** `model.provider`, or `""`. */
  readonly provider: string;
  /** `model.base_url`, or `""`. */
  readonly baseUrl: string;
  /** Whether Hermes compresses at all. */
  readonly compressionEnabled: boolean;
  /** The output reservation Hermes' compressor subtracts (`HERMES_MAX_TOKENS`, `model.max_tokens`), when set. */
  readonly maxTokens: number | undefined;
  /** Every model asked about, `model` first. */
  readonly models: Readonly<Record<string, HermesModelWindow>>;
  /** The interpreter asked, and how it was found. */
  readonly python: HermesPython;
}

/** Options for {@linkcode askHermes}. */
export interface AskHermesOptions {
  /** The Hermes `config.yaml`; Hermes reads it as `$HERMES_HOME/config.yaml`. */
  readonly configPath: string;
  /**
   * `INCONTEXT_HERMES_PYTHON`.
   *
   * @default the interpreter named by the `hermes` executable on PATH, else `python3`
   */
  readonly python?: string;
  /** Models to ask about besides `model.default`. */
  readonly models?: readonly string[];
  /** The context length to use when the config names none (`INCONTEXT_CONTEXT_LENGTH`). */
  readonly contextLength?: number;
  /**
   * The environment of the script (`PATH`, `HERMES_MAX_TOKENS`, `PYTHONPATH`).
   *
   * @default process.env
   */
  readonly env?: Record<string, string | undefined>;
  /**
   * How long the script may take, in seconds.
   *
   * @default 30
   */
  readonly timeoutSeconds?: number;
}

const PYTHON_VARIABLE = "INCONTEXT_HERMES_PYTHON";
const WITHOUT_HERMES =
  "where Hermes is not installed, set INCONTEXT_HERMES_RELEASE (2026-07, 0.19 or 2026-09) or INCONTEXT_COMPRESSION_WINDOW_TOKENS instead";

interface Run {
  readonly stdout: string;
  readonly failure?: ConfigIssue;
}

function run(
  python: HermesPython,
  { args, env, timeoutMs }: {
    readonly args: string[];
    readonly env: Record<string, string | undefined>;
    readonly timeoutMs: number;
  },
): Promise<Run> {
  const variable = python.source === PYTHON_VARIABLE
    ? PYTHON_VARIABLE
    : `${PYTHON_VARIABLE} (unset: ${python.source})`;
  return new Promise((resolve) => {
    // An undefined value would reach the child as the text "undefined".
    const defined = Object.fromEntries(
      Object.entries(env).filter(([, value]) => value !== undefined),
    ) as Record<string, string>;
    const child = execFile(python.command, args, {
      env: defined,
      timeout: timeoutMs,
      maxBuffer: 1024 * 1024,
      encoding: "utf8",
    }, (error, stdout) => {
      if (error === null) return resolve({ stdout });
      const { code, killed } = error as { code?: unknown; killed?: boolean };
      let rule: string;
      if (code === "ENOENT" || code === "EACCES") {
        rule =
          `names no Python interpreter that can be run (${code}): set it to the Python of Hermes' installation; ${WITHOUT_HERMES}`;
      } else if (killed) {
        rule = `did not answer within ${
          timeoutMs / 1000
        } s while building Hermes' agent: check that this Python imports Hermes quickly`;
      } else {
        rule =
          `ended with an error (exit code ${code}) while building Hermes' agent`;
      }
      resolve({ stdout: "", failure: { variable, rule } });
    });
    // The script reads nothing: its standard input is closed at once.
    child.stdin?.end();
  });
}

function failure(
  answer: Record<string, unknown>,
  python: HermesPython,
): ConfigIssue {
  const type = typeof answer.type === "string" ? answer.type : "an error";
  switch (answer.error) {
    case "import":
      return {
        variable: python.source === PYTHON_VARIABLE
          ? PYTHON_VARIABLE
          : `${PYTHON_VARIABLE} (unset: ${python.source})`,
        rule:
          `cannot import Hermes (${type}): set it to the Python that runs Hermes, e.g. the one of its virtual environment; ${WITHOUT_HERMES}`,
      };
    case "engine":
      return {
        variable: at("context.engine"),
        rule:
          "selects a context engine other than Hermes' compressor, whose own policy decides when it compresses: set INCONTEXT_COMPRESSION_WINDOW_TOKENS to its window",
      };
    case "context_length":
      return {
        variable: at("model.context_length"),
        rule:
          "is unset and so is INCONTEXT_CONTEXT_LENGTH: set either to the served context length",
      };
    default:
      return {
        variable: HERMES_VARIABLE,
        rule:
          `could not be read by Hermes: building its agent and its compressor failed (${type})`,
      };
  }
}

function positive(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) &&
    value > 0;
}

function modelWindow(value: unknown): HermesModelWindow | undefined {
  const {
    window,
    context_length: contextLength,
    source,
    file,
    fallback,
    wiring,
    refused,
    check,
  } = (value ?? {}) as Record<string, unknown>;
  if (!positive(window) || !positive(contextLength)) return undefined;
  if (source !== "agent" && source !== "compressor") return undefined;
  if (typeof file !== "string") return undefined;
  return Object.freeze({
    window,
    contextLength,
    source,
    file,
    ...(typeof fallback === "string" ? { fallback } : {}),
    ...(typeof wiring === "string" ? { wiring } : {}),
    ...(Number.isSafeInteger(refused) ? { refused: refused as number } : {}),
    ...(Number.isSafeInteger(check) ? { selfCheck: check as number } : {}),
  });
}

/** The answer checked, or undefined when it is not the script's shape. */
function readAnswer(
  answer: Record<string, unknown>,
  python: HermesPython,
): HermesAnswer | undefined {
  const own = modelWindow(answer);
  const raw = answer.models;
  if (own === undefined || typeof raw !== "object" || raw === null) {
    return undefined;
  }
  const models: Record<string, HermesModelWindow> = {};
  for (const [name, value] of Object.entries(raw)) {
    const window = modelWindow(value);
    if (window === undefined) return undefined;
    models[name] = window;
  }
  const text = (value: unknown) => typeof value === "string" ? value : "";
  return Object.freeze({
    ...own,
    hermesVersion: text(answer.hermes_version),
    versionSource: text(answer.version_source),
    model: text(answer.model),
    provider: text(answer.provider),
    baseUrl: text(answer.base_url),
    compressionEnabled: answer.compression_enabled !== false,
    maxTokens: positive(answer.max_tokens) ? answer.max_tokens : undefined,
    models: Object.freeze(models),
    python,
  });
}

/**
 * Asks the installed Hermes for its compression window: runs a small script
 * in the Python that runs Hermes, which builds, for each model, the
 * `run_agent.AIAgent` Hermes' CLI builds for the config (offline, with a
 * private `HERMES_HOME`) and prints `agent.context_compressor`'s
 * `threshold_tokens` and `context_length`, and Hermes' version. Where the
 * agent cannot be built offline, the answer says so and comes from Hermes'
 * `ContextCompressor` built the way `init_agent()` does. The script is given
 * the config path, the model names and the context length only.
 *
 * @param options The config, the interpreter and the models.
 * @returns Hermes' answer.
 * @throws {ConfigError} Naming what failed and how to fix it: the config is
 * not a `config.yaml`, no Python, Hermes not importable from it, the script
 * timed out, Hermes could build neither its agent nor its compressor, no
 * context length, or a context engine of Hermes' plugins in place of its
 * compressor.
 *
 * @example Asking the Hermes installed on this machine
 * ```ts ignore
 * // Not run as a test: it needs a Hermes installation.
 * import { askHermes } from "@incontext/incontext/hermes";
 *
 * const answer = await askHermes({ configPath: `${Deno.env.get("HOME")}/.hermes/config.yaml` });
 * console.log(answer.hermesVersion, answer.window, answer.contextLength);
 * ```
 */
export async function askHermes(
  options: AskHermesOptions,
): Promise<HermesAnswer> {
  const { configPath, env = process.env, timeoutSeconds = 30 } = options;
  if (basename(configPath) !== "config.yaml") {
    throw new ConfigError([{
      variable: HERMES_VARIABLE,
      rule:
        "must name a file called config.yaml: Hermes reads $HERMES_HOME/config.yaml",
    }]);
  }
  const python = await findHermesPython(options.python, env.PATH);
  const request = JSON.stringify({
    config: configPath,
    models: options.models ?? [],
    context_length: options.contextLength ?? null,
  });
  const result = await run(python, {
    args: ["-c", HERMES_PROBE_SCRIPT, request],
    env,
    timeoutMs: Math.ceil(timeoutSeconds * 1000),
  });
  if (result.failure !== undefined) throw new ConfigError([result.failure]);
  let parsed: Record<string, unknown> = {};
  try {
    const value = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "");
    if (typeof value === "object" && value !== null) parsed = value;
  } catch {
    // Handled below: no answer of the script's shape.
  }
  if (parsed.error !== undefined) {
    throw new ConfigError([failure(parsed, python)]);
  }
  const answer = readAnswer(parsed, python);
  if (answer === undefined) {
    throw new ConfigError([{
      variable: PYTHON_VARIABLE,
      rule:
        "ran the Hermes window script without a valid answer: set it to the Python that runs Hermes",
    }]);
  }
  return answer;
}
