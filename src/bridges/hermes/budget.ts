/**
 * The proxy's window and routes with a Hermes config: asked of the installed
 * Hermes (and followed as `config.yaml` changes), or mirrored from a named
 * Hermes release where Hermes is not installed, or fixed by
 * `INCONTEXT_COMPRESSION_WINDOW_TOKENS`. Requests are budgeted for Hermes'
 * `model.default` (on its provider and base URL, where a host says where a
 * request goes) and for the models `INCONTEXT_HERMES_MODELS` names, each
 * with its own window. The `./hermes` entry does not export it.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { HermesConfig } from "./config.ts";
import { errorType } from "../../core/error_type.ts";
import { ConfigError, type ConfigIssue } from "../../core/config_error.ts";
import type { BudgetRoute } from "../../core/route.ts";
import {
  type HermesAnswer,
  type HermesSettings,
  hermesWindow,
  type HermesWindowWatch,
  resolveWindow,
  watchHermesWindow,
} from "./mod.ts";

const logger = getLogger(["incontext", "hermes"]);

/** Logs a changed config that could not be asked about; the old window stays. */
function logFailure(error: unknown): void {
  const rules = error instanceof ConfigError
    ? error.issues.map((issue) => `${issue.variable} ${issue.rule}`).join("; ")
    : errorType(error);
  logger.error(
    "hermes config changed but its window could not be had, the old one stays: {rules}",
    { rules },
  );
}

/** The budget a Hermes config gives the proxy. */
export interface HermesBudget {
  /** W of Hermes' own model. */
  readonly window: number;
  /** The context length Hermes works with, when it told. */
  readonly contextLength: number | undefined;
  /** The routes budgeted, each with its window; none: every request. */
  readonly routes: readonly BudgetRoute[] | undefined;
  /** The watch of `config.yaml`, when the installed Hermes was asked. */
  readonly watch: HermesWindowWatch | undefined;
  /** Where W came from, for the start-up log. */
  readonly source: string;
}

/** What {@linkcode hermesBudget} reads. */
export interface HermesBudgetInput {
  readonly config: HermesConfig;
  readonly settings: HermesSettings;
  readonly env: Record<string, string | undefined>;
}

/** Where Hermes sends its own model's requests. */
interface HermesRoute {
  /** Hermes' own model (or `INCONTEXT_MODEL`); none: every request is budgeted. */
  readonly model: string | undefined;
  readonly provider: string | undefined;
  readonly baseUrl: string | undefined;
}

/**
 * The routes budgeted, Hermes' own model first; `undefined` (every request
 * budgeted with W) when no model is known.
 */
export function hermesRoutes(
  route: HermesRoute,
  windows: ReadonlyMap<string, number>,
): BudgetRoute[] | undefined {
  const { model, provider, baseUrl } = route;
  if (model === undefined || model === "") return undefined;
  const where = {
    ...(provider ? { provider } : {}),
    ...(baseUrl ? { baseUrl } : {}),
  };
  const routes: BudgetRoute[] = [];
  for (const [name, window] of windows) {
    // Other models run on routes of their own, which the config does not name.
    routes.push(
      name === model ? { model: name, window, ...where } : {
        model: name,
        window,
      },
    );
  }
  return routes;
}

/** The windows of an answer, by model, Hermes' (or INCONTEXT_MODEL's) first. */
function answerWindows(
  answer: HermesAnswer,
  model: string,
): Map<string, number> {
  const windows = new Map<string, number>();
  windows.set(model, answer.models[model]?.window ?? answer.window);
  for (const [name, { window }] of Object.entries(answer.models)) {
    if (name !== answer.model && !windows.has(name)) windows.set(name, window);
  }
  return windows;
}

/**
 * W <= C, F < W, R < W, F + R < W for every window Hermes gave: a window
 * that breaks one would fail every request of its model.
 */
export function windowIssues(
  config: HermesConfig,
  { windows, contextLength }: {
    readonly windows: ReadonlyMap<string, number>;
    readonly contextLength: number | undefined;
  },
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const room = config.fallbackMarginTokens + config.minOutputTokens;
  for (const [model, window] of windows) {
    const label = `INCONTEXT_HERMES_CONFIG (window ${window} of model ${
      JSON.stringify(model.slice(0, 100))
    })`;
    if (contextLength !== undefined && window > contextLength) {
      issues.push({
        variable: label,
        rule: "must not exceed INCONTEXT_CONTEXT_LENGTH",
      });
    }
    if (room >= window) {
      issues.push({
        variable: label,
        rule:
          "must exceed INCONTEXT_FALLBACK_MARGIN_TOKENS + INCONTEXT_MIN_OUTPUT_TOKENS",
      });
    }
  }
  return issues;
}

/**
 * Resolves the window and routes of a Hermes config.
 *
 * @throws {ConfigError} When Hermes cannot be asked, or a window it gives
 * breaks a rule, or no window can be had.
 */
export async function hermesBudget(
  { config, settings, env }: HermesBudgetInput,
): Promise<HermesBudget> {
  const models = config.hermesModels ?? [];
  const fixed = config.compressionWindowTokens !== undefined;
  if (fixed || config.hermesRelease !== undefined) {
    const window = resolveWindow(config, settings);
    const model = config.model ?? settings.model.default;
    const windows = new Map<string, number>();
    if (model !== undefined) windows.set(model, window);
    for (const name of models) {
      if (windows.has(name)) continue;
      windows.set(
        name,
        fixed ? window : hermesWindow(settings, {
          release: config.hermesRelease!,
          model: name,
          ...(config.contextLength === undefined
            ? {}
            : { contextLength: config.contextLength }),
        }),
      );
    }
    const contextLength = config.contextLength ?? settings.model.contextLength;
    const issues = windowIssues(config, { windows, contextLength });
    if (issues.length > 0) throw new ConfigError(issues);
    return {
      window,
      contextLength: settings.model.contextLength,
      routes: hermesRoutes({
        model,
        provider: settings.model.provider,
        baseUrl: settings.model.baseUrl,
      }, windows),
      watch: undefined,
      source: fixed
        ? "INCONTEXT_COMPRESSION_WINDOW_TOKENS"
        : `Hermes ${config.hermesRelease} arithmetic (INCONTEXT_HERMES_RELEASE)`,
    };
  }
  const accept = (answer: HermesAnswer) => {
    const windows = answerWindows(answer, config.model ?? answer.model);
    const contextLength = config.contextLength ?? answer.contextLength;
    const issues = windowIssues(config, { windows, contextLength });
    if (issues.length > 0) throw new ConfigError(issues);
  };
  const asked = config.model === undefined ? models : [...models, config.model];
  const watch = await watchHermesWindow({
    configPath: config.hermesConfig!,
    models: [...new Set(asked)],
    env,
    accept,
    onError: logFailure,
    ...(config.hermesPython === undefined
      ? {}
      : { python: config.hermesPython }),
    ...(config.contextLength === undefined
      ? {}
      : { contextLength: config.contextLength }),
  });
  const answer = watch.current();
  return {
    window: answer.window,
    contextLength: answer.contextLength,
    routes: liveRoutes(answer, config),
    watch,
    source: answerSource(answer),
  };
}

/** Why Hermes' agent was not asked, in words, from a script's reason code. */
export function fallbackReason(code: string | undefined): string {
  switch (code) {
    case "base_url":
      return "model.base_url is unset and Hermes names no base URL for model.provider";
    case "network":
      // Hermes 0.19 looks up the context length of a model other than
      // model.default on its server; custom_providers can name it offline.
      return "building it tried to reach the network, e.g. to look up a context length: name the model's context_length under custom_providers";
    default:
      return `building it raised ${code ?? "an error"}`;
  }
}

/** Where W came from, for the start-up log: the agent, or the compressor instead. */
export function answerSource(answer: HermesAnswer): string {
  const where =
    `${answer.file}; version from ${answer.versionSource}; Python: ${answer.python.source}`;
  const hermes = `Hermes ${answer.hermesVersion}`;
  if (answer.source === "agent") {
    return `${hermes} agent: run_agent.AIAgent's context_compressor (${where})`;
  }
  return `${hermes} ContextCompressor built as ${
    answer.wiring ?? "0.18"
  }'s init_agent() does, not its agent: ${
    fallbackReason(answer.fallback)
  } (${where})`;
}

/** A warning for the log: a message template and its values. */
export interface HermesWarning {
  readonly message: string;
  readonly properties: Readonly<Record<string, unknown>>;
}

/**
 * What the start-up log warns about in an answer: each model whose window
 * did not come from Hermes' agent, and each window Hermes' own threshold
 * function does not give.
 */
export function answerWarnings(answer: HermesAnswer): HermesWarning[] {
  const warnings: HermesWarning[] = [];
  for (const [name, model] of Object.entries(answer.models)) {
    // Quoted, as in the start-up line: a name never breaks a log line.
    const label = JSON.stringify(name.slice(0, 100));
    if (model.source === "compressor") {
      warnings.push({
        message:
          "hermes model {model}: the agent could not be built offline ({reason}); W={window} comes from ContextCompressor built as {wiring}'s init_agent() does",
        properties: {
          model: label,
          reason: fallbackReason(model.fallback),
          window: model.window,
          wiring: model.wiring ?? "0.18",
        },
      });
    }
    if (model.selfCheck !== undefined && model.selfCheck !== model.window) {
      warnings.push({
        message:
          "hermes self-check: model {model}: Hermes' {holder} holds W={window} but its _compute_threshold_tokens gives {check}; budgeting with W={window}",
        properties: {
          model: label,
          holder: model.source === "agent" ? "agent" : "compressor",
          window: model.window,
          check: model.selfCheck,
        },
      });
    }
  }
  return warnings;
}

/** The routes of an answer Hermes gave. */
export function liveRoutes(
  answer: HermesAnswer,
  config: Pick<HermesConfig, "model">,
): BudgetRoute[] | undefined {
  const model = config.model ?? answer.model;
  return hermesRoutes(
    { model, provider: answer.provider, baseUrl: answer.baseUrl },
    answerWindows(answer, model),
  );
}
