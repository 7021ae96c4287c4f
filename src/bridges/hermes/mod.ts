/**
 * The compression window W of a Hermes Agent: the prompt size at which Hermes
 * compresses, so an output budget that stops below W never makes Hermes
 * compress early. Hermes' threshold arithmetic changes between releases, so
 * W comes from the installed Hermes itself: {@linkcode askHermes} runs a
 * small script in the Python that runs Hermes, which builds the agent
 * Hermes' CLI builds for the config (`run_agent.AIAgent`, offline) and prints
 * its `context_compressor.threshold_tokens`;
 * {@linkcode watchHermesWindow} asks again whenever `config.yaml` changes.
 * Where Hermes is not installed, {@linkcode hermesWindow} mirrors the
 * arithmetic of a release the caller names (`2026-07` for Hermes 0.18.x,
 * `0.19` for Hermes 0.19.x, or `2026-09`).
 *
 * @example Mirroring a release where Hermes is not installed
 * ```ts
 * import { hermesWindow, parseHermesSettings } from "@incontext/incontext/hermes";
 * import { strictEqual } from "node:assert/strict";
 *
 * const settings = parseHermesSettings(`
 * model:
 *   default: Qwen/Qwen3-Coder-30B-A3B-Instruct
 *   provider: custom
 *   base_url: http://127.0.0.1:8787/v1
 *   context_length: 65536
 * `);
 * strictEqual(hermesWindow(settings, { release: "2026-07" }), 64000);
 * strictEqual(hermesWindow(settings, { release: "2026-09" }), 55705);
 * ```
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { readFile } from "node:fs/promises";
import {
  at,
  errorCode,
  HERMES_VARIABLE,
  type HermesSettings,
  POSITIVE_INTEGER,
  readSettings,
  settingsIssues,
} from "./settings.ts";
import {
  HERMES_RELEASES,
  type HermesRelease,
  modelThreshold,
  raisedThreshold,
  readsModelKeys,
  releaseList,
  thresholdTokens,
} from "./threshold.ts";
import type { HermesConfig } from "./config.ts";
import { ConfigError } from "../../core/config_error.ts";

export type { HermesRelease, HermesSettings };
export { HERMES_RELEASES };
export {
  askHermes,
  type AskHermesOptions,
  type HermesAnswer,
  type HermesModelWindow,
  type HermesWindowSource,
} from "./ask.ts";
export type { HermesPython } from "./python.ts";
export {
  type HermesWindowWatch,
  type WatchHermesOptions,
  watchHermesWindow,
} from "./watch.ts";

const logger = getLogger(["incontext", "hermes"]);

/**
 * Options for {@linkcode hermesWindow}: the release whose arithmetic to
 * mirror, and values the caller knows better than the file, such as the
 * `INCONTEXT_MODEL` and `INCONTEXT_CONTEXT_LENGTH` settings.
 *
 * @example Overriding the context length of the file
 * ```ts
 * import { hermesWindow, parseHermesSettings } from "@incontext/incontext/hermes";
 * import { strictEqual } from "node:assert/strict";
 *
 * const settings = parseHermesSettings("model:\n  context_length: 65536\n");
 * strictEqual(hermesWindow(settings, { release: "2026-09", contextLength: 262144 }), 196608);
 * ```
 */
export interface HermesWindowOptions {
  /**
   * The Hermes release whose arithmetic to mirror: `2026-07` (Hermes
   * 0.18.x), `0.19` (Hermes 0.19.x) or `2026-09`. `2026-07` reads neither
   * `compression.threshold_tokens` nor `compression.model_thresholds`, as
   * Hermes 0.18.2 does not; the others read both, as Hermes 0.19.0 does.
   */
  readonly release: HermesRelease;
  /**
   * The model name matched against `compression.model_thresholds`.
   *
   * @default settings.model.default
   */
  readonly model?: string;
  /**
   * The context length in tokens.
   *
   * @default settings.model.contextLength
   */
  readonly contextLength?: number;
  /**
   * Hermes' output reservation in tokens: pass it when Hermes runs with
   * `HERMES_MAX_TOKENS` rather than `model.max_tokens`.
   *
   * @default settings.model.maxTokens
   */
  readonly maxTokens?: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Reads Hermes settings from the text of a `config.yaml`. Keys other than
 * `model` and `compression` are ignored; so are unknown keys inside them. The
 * YAML 1.2 core schema is used, so only JSON-compatible values are built:
 * `enabled: no` is the string `"no"` (an error), not YAML 1.1's `false`.
 *
 * @param text The YAML text; an empty document means all defaults.
 * @returns The settings, frozen.
 * @throws {ConfigError} When the text is not one valid YAML document with a
 * mapping at the top level, or when a known key has the wrong type or range:
 * one error lists every issue, each naming `INCONTEXT_HERMES_CONFIG` and the
 * key path, never a value.
 *
 * @example Reading the keys Hermes uses for compression
 * ```ts
 * import { parseHermesSettings } from "@incontext/incontext/hermes";
 * import { deepStrictEqual } from "node:assert/strict";
 *
 * const settings = parseHermesSettings(`
 * model:
 *   default: qwen3-coder-30b
 *   context_length: 262144
 * compression:
 *   threshold: 0.6
 *   model_thresholds: { qwen3-coder: 0.8 }
 * terminal: { backend: local }
 * `);
 * deepStrictEqual(settings, {
 *   model: { default: "qwen3-coder-30b", contextLength: 262144 },
 *   compression: { enabled: true, threshold: 0.6, modelThresholds: { "qwen3-coder": 0.8 } },
 * });
 * ```
 */
export function parseHermesSettings(text: string): HermesSettings {
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot parse the Hermes settings as 'text' must be a string: current type is ${typeof text}`,
    );
  }
  return readSettings(text);
}

/**
 * Reads Hermes settings from a `config.yaml` file, usually
 * `$HERMES_HOME/config.yaml` (`~/.hermes/config.yaml`), with
 * `node:fs/promises`, so it runs on Deno and Node alike.
 *
 * @param path The file path or `file:` URL, e.g. `config.hermesConfig`.
 * @returns The settings, frozen.
 * @throws {ConfigError} When the file cannot be read (naming the error code,
 * e.g. `ENOENT`, never the path) or when {@linkcode parseHermesSettings}
 * rejects its text.
 *
 * @example Reading Hermes' own configuration
 * ```ts ignore
 * // Not run as a test: it needs a Hermes installation.
 * import { loadHermesSettings } from "@incontext/incontext/hermes";
 * import { homedir } from "node:os";
 * import { join } from "node:path";
 *
 * const home = process.env.HERMES_HOME ?? join(homedir(), ".hermes");
 * const settings = await loadHermesSettings(join(home, "config.yaml"));
 * console.log(settings.model.contextLength);
 * ```
 *
 * @example Reporting a file that does not exist
 * ```ts
 * import { ConfigError } from "@incontext/incontext/config";
 * import { loadHermesSettings } from "@incontext/incontext/hermes";
 * import { rejects } from "node:assert/strict";
 *
 * await rejects(loadHermesSettings("/nonexistent/.hermes/config.yaml"), (error) =>
 *   error instanceof ConfigError &&
 *   error.message.endsWith("INCONTEXT_HERMES_CONFIG must name a readable file (ENOENT)"));
 * ```
 */
export async function loadHermesSettings(
  path: string | URL,
): Promise<HermesSettings> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    // The cause is dropped on purpose: its message carries the path.
    throw new ConfigError([{
      variable: HERMES_VARIABLE,
      rule: `must name a readable file (${errorCode(error)})`,
    }]);
  }
  return parseHermesSettings(text);
}

function requirePositiveInteger(
  name: string,
  value: number | undefined,
): void {
  if (value === undefined || POSITIVE_INTEGER.test(value)) return;
  throw new RangeError(
    `Cannot compute the Hermes window as '${name}' must be a positive integer: current value is ${value}`,
  );
}

/**
 * Computes the compression window W as the named Hermes release computes its
 * compression threshold, for proxies that run where Hermes is not installed
 * (where it is, {@linkcode askHermes} asks Hermes itself):
 *
 * 1. pct = `threshold`; with `0.19` and `2026-09`, the `model_thresholds` entry
 *    whose key is the longest substring of the model name replaces it first,
 *    so the next step raises it too, as Hermes does.
 * 2. Below a 512,000-token context, pct is raised to at least 0.75.
 * 3. eff = context - max_tokens, where max_tokens is Hermes' own output
 *    reservation (`model.max_tokens`), not the `max_tokens` of a request nor
 *    the budget incontext computes; unset means no reservation, and eff <= 0
 *    falls back to the context.
 * 4. value = floor(eff * pct), floored at 64,000. `2026-07`, `0.19`: a floor that
 *    reaches eff becomes max(1, min(floor(eff * 0.85), eff - 1)).
 *    `2026-09`: when the floor binds and exceeds floor(eff * 0.85),
 *    max(value, floor(eff * 0.85)) instead.
 * 5. `0.19`, `2026-09`: capped by `threshold_tokens`. Always capped by the context
 *    length, and never below 1.
 *
 * With compression disabled, W is the context length.
 *
 * @param settings The Hermes settings, e.g. from {@linkcode loadHermesSettings}.
 * @param options The release, and the model, context length and output reservation when the caller knows them better.
 * @returns W in tokens: 1 <= W <= the context length.
 * @throws {ConfigError} When no context length is known (neither
 * `model.context_length` nor `options.contextLength`, i.e.
 * `INCONTEXT_CONTEXT_LENGTH`), or when a setting breaks its rule, e.g. a
 * threshold outside (0, 1].
 * @throws {RangeError} When `options.release` is not a known release, or
 * `options.contextLength` or `options.maxTokens` is not a positive integer.
 *
 * @example The worked examples of both releases
 * ```ts
 * import { hermesWindow, parseHermesSettings } from "@incontext/incontext/hermes";
 * import { strictEqual } from "node:assert/strict";
 *
 * const settings = parseHermesSettings("compression:\n  threshold: 0.5\n");
 * for (const release of ["2026-07", "0.19", "2026-09"] as const) {
 *   strictEqual(hermesWindow(settings, { release, contextLength: 131072 }), 98304);
 *   strictEqual(hermesWindow(settings, { release, contextLength: 262144 }), 196608);
 *   strictEqual(hermesWindow(settings, { release, contextLength: 1000000 }), 500000);
 * }
 * strictEqual(hermesWindow(settings, { release: "2026-07", contextLength: 65536 }), 64000);
 * strictEqual(hermesWindow(settings, { release: "0.19", contextLength: 65536 }), 64000);
 * strictEqual(hermesWindow(settings, { release: "2026-09", contextLength: 65536 }), 55705);
 * ```
 */
export function hermesWindow(
  settings: HermesSettings,
  options: HermesWindowOptions,
): number {
  const { release } = options ?? {};
  if (!HERMES_RELEASES.includes(release)) {
    throw new RangeError(
      `Cannot compute the Hermes window as 'release' must be one of ${
        HERMES_RELEASES.join(", ")
      }: current value is ${String(release)}`,
    );
  }
  requirePositiveInteger("contextLength", options.contextLength);
  requirePositiveInteger("maxTokens", options.maxTokens);
  const issues = settingsIssues(settings);
  const context = options.contextLength ?? settings.model.contextLength;
  if (context === undefined) {
    issues.push({
      variable: at("model.context_length"),
      rule:
        "is unset and so is INCONTEXT_CONTEXT_LENGTH: set either to the served context length",
    });
  }
  if (issues.length > 0 || context === undefined) {
    throw new ConfigError(issues);
  }
  const { compression } = settings;
  if (!compression.enabled) return context;
  // Hermes 0.18.x reads neither key.
  const current = readsModelKeys(release);
  const pct = raisedThreshold(
    context,
    current
      ? modelThreshold(
        options.model ?? settings.model.default,
        compression.modelThresholds,
        compression.threshold,
      )
      : compression.threshold,
  );
  const maxTokens = options.maxTokens ?? settings.model.maxTokens;
  const window = Math.min(
    thresholdTokens({ contextLength: context, pct, maxTokens, release }),
    (current ? compression.thresholdTokens : undefined) ?? context,
    context,
  );
  return Math.max(1, window);
}

/**
 * The compression window W for a deployment without Hermes at hand:
 * `INCONTEXT_COMPRESSION_WINDOW_TOKENS` when set, else {@linkcode hermesWindow}
 * of the Hermes settings for the release named by `INCONTEXT_HERMES_RELEASE`,
 * with the configured model and context length (`INCONTEXT_MODEL`,
 * `INCONTEXT_CONTEXT_LENGTH`) taking precedence over the file's.
 *
 * @param config The configuration from `loadConfig()`, or the part of it used here.
 * @param settings The Hermes settings, when `INCONTEXT_HERMES_CONFIG` names a file.
 * @returns W in tokens.
 * @throws {ConfigError} When neither source gives a window (the message names
 * `INCONTEXT_COMPRESSION_WINDOW_TOKENS` and `INCONTEXT_HERMES_CONFIG`), when
 * Hermes settings are given without a release, or when
 * {@linkcode hermesWindow} throws one.
 *
 * @example The environment overrides Hermes
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { parseHermesSettings, resolveWindow } from "@incontext/incontext/hermes";
 * import { strictEqual } from "node:assert/strict";
 *
 * const settings = parseHermesSettings("model:\n  context_length: 131072\n");
 * const env = {
 *   INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
 *   INCONTEXT_HERMES_RELEASE: "2026-07",
 * };
 * strictEqual(resolveWindow(loadConfig(env), settings), 98304);
 * const fixed = loadConfig({ ...env, INCONTEXT_COMPRESSION_WINDOW_TOKENS: "90000" });
 * strictEqual(resolveWindow(fixed, settings), 90000);
 * ```
 */
export function resolveWindow(
  config: Pick<
    HermesConfig,
    "compressionWindowTokens" | "contextLength" | "model" | "hermesRelease"
  >,
  settings?: HermesSettings,
): number {
  if (config.compressionWindowTokens !== undefined) {
    logger.debug("compression window={window} source=env", {
      window: config.compressionWindowTokens,
    });
    return config.compressionWindowTokens;
  }
  if (settings === undefined) {
    throw new ConfigError([{
      variable: "INCONTEXT_COMPRESSION_WINDOW_TOKENS",
      rule:
        `is unset and so is ${HERMES_VARIABLE}: set either to give the compression window`,
    }]);
  }
  if (config.hermesRelease === undefined) {
    throw new ConfigError([{
      variable: "INCONTEXT_HERMES_RELEASE",
      rule:
        `is unset: without Hermes installed, set it to the Hermes release whose threshold arithmetic to mirror (${releaseList()}), or set INCONTEXT_COMPRESSION_WINDOW_TOKENS`,
    }]);
  }
  const options: Mutable<HermesWindowOptions> = {
    release: config.hermesRelease,
  };
  if (config.model !== undefined) options.model = config.model;
  if (config.contextLength !== undefined) {
    options.contextLength = config.contextLength;
  }
  const window = hermesWindow(settings, options);
  logger.debug("compression window={window} source=hermes-{release}", {
    window,
    release: config.hermesRelease,
  });
  return window;
}
