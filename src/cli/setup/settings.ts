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
import type { Setting } from "../../_internal/setting.ts";
import { SETTINGS } from "../../config/settings.ts";
import {
  type HermesBudget,
  hermesBudget,
} from "../../bridges/hermes/budget.ts";
import { unknownBackends } from "./backend_chain.ts";

/** Every setting with a flag, by the flag's name (`upstream` for `--upstream URL`). */
export const FLAGS: Readonly<Record<string, Setting<unknown>>> = Object
  .fromEntries(
    Object.values<Setting<unknown>>(SETTINGS)
      .filter((record) => record.flag !== undefined)
      .map((record) => [/^--(\S+)/.exec(record.flag!)![1]!, record]),
  );

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
    ...(sources.isSet(BACKEND)
      ? { backendSource: sources.sourceOf(BACKEND) }
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
      this.merged[FLAGS[flag]!.variable] = value;
    }
  }

  /** Whether the setting's variable, or its older name, is set. */
  isSet(source: Source): boolean {
    return this.text(source) !== undefined;
  }

  /** The text of the setting's variable, else of its older name. */
  text(source: Source): string | undefined {
    return this.merged[source.variable] ??
      (source.alias === undefined ? undefined : this.merged[source.alias]);
  }

  #flagOf(variable: string): string | undefined {
    return Object.keys(this.#flags).find((flag) =>
      FLAGS[flag]!.variable === variable
    );
  }

  /** The issue, as `--flag (VARIABLE)` when a flag set its variable. */
  named(issue: ConfigIssue): ConfigIssue {
    const flag = this.#flagOf(issue.variable);
    return flag
      ? { ...issue, variable: `--${flag} (${issue.variable})` }
      : issue;
  }

  /** The variable a value was read from: the primary name, else its alias. */
  readFrom({ variable, alias }: Source): string {
    const fromAlias = alias !== undefined &&
      this.merged[variable] === undefined && this.merged[alias] !== undefined;
    return fromAlias ? alias : variable;
  }

  /** Where a value came from: its flag, else the variable it was read from. */
  sourceOf(source: Source): string {
    const flag = this.#flagOf(source.variable);
    return flag === undefined ? this.readFrom(source) : `--${flag}`;
  }
}

/** Where a setting is read from. */
type Source = Pick<Setting<unknown>, "variable" | "alias">;

/** The configuration, when it loads; its problems go to `issues`. */
function readConfig(
  sources: Sources,
  options: ResolveServerOptions,
  issues: ConfigIssue[],
): Config | undefined {
  const { merged } = sources;
  if ((options.requireUpstream ?? true) && !sources.isSet(UPSTREAM)) {
    issues.push({
      variable: UPSTREAM.variable,
      rule: "is required (or --upstream)",
    });
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
      text: sources.text(BACKEND),
      variable: sources.readFrom(BACKEND),
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
  const path = config?.hermesConfig ?? sources.text(HERMES)?.trim();
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
  const windowSet = sources.isSet(WINDOW);
  if (config !== undefined && hermes.path === undefined && windowSet) {
    return await gather(issues, () => resolveWindow(config));
  }
  if (!windowSet && hermes.path === undefined) {
    issues.push({
      variable: WINDOW.variable,
      rule:
        `is unset and so is ${HERMES.variable}: set either (or --window, --hermes-config) to give the compression window`,
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
      variable: CONTEXT.variable,
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
    return sources.sourceOf(WINDOW);
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

const {
  upstreamUrl: UPSTREAM,
  backend: BACKEND,
  compressionWindowTokens: WINDOW,
  contextLength: CONTEXT,
  hermesConfig: HERMES,
} = SETTINGS;

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
