/**
 * How a bundled backend reads the configuration: its name and the settings
 * it requires, declared once beside its factory, and the HTTP options every
 * HTTP backend takes from the same settings.
 *
 * @module
 */
import type { Backend } from "../../core/backend.ts";
import { BACKEND_SETTINGS, type BackendConfig } from "./config.ts";
import { ConfigError } from "../../core/config_error.ts";
import { type CountCache, sharedCountCache } from "../../cache/mod.ts";

/**
 * A bundled backend as the registry plugs it in: its name, the settings it
 * cannot work without (the registry reports their variables), and its factory.
 */
export interface BundledBackend<
  K extends RequirableSetting = RequirableSetting,
> {
  readonly name: string;
  readonly requires: readonly K[];
  readonly factory: (config: BackendConfig) => Backend;
}

/** A setting a backend may require: one of the backends' own. */
export type RequirableSetting = keyof typeof BACKEND_SETTINGS;

/** The values of `K`, each known to be set. */
export type RequiredSettings<K extends RequirableSetting> = {
  readonly [P in K]-?: Exclude<BackendConfig[P], undefined>;
};

/**
 * The settings `backend` requires, read from `config`.
 *
 * @throws {ConfigError} Listing the variable of every one that is unset.
 */
export function requireConfig<K extends RequirableSetting>(
  backend: Pick<BundledBackend<K>, "name" | "requires">,
  config: BackendConfig,
): RequiredSettings<K> {
  const issues = backend.requires
    .filter((key) => config[key] === undefined)
    .map((key) => ({
      variable: BACKEND_SETTINGS[key].variable,
      rule: `is required by the '${backend.name}' backend`,
    }));
  if (issues.length > 0) throw new ConfigError(issues);
  return config as BackendConfig & RequiredSettings<K>;
}

/** The options {@linkcode httpOptionsFromConfig} reads. */
export interface ConfiguredHttpOptions {
  readonly url?: string;
  readonly apiKey?: string;
  readonly timeoutSeconds: number;
  readonly userAgent: string;
  readonly cache: CountCache;
}

/**
 * An HTTP backend's options from the configuration: the URL from
 * `INCONTEXT_TOKENIZER_URL` when set, `apiKey` when set, the timeout and
 * `User-Agent`, and the process-wide count cache.
 */
export function httpOptionsFromConfig(
  config: BackendConfig,
  apiKey: string | undefined,
): ConfiguredHttpOptions {
  return {
    ...(config.tokenizerUrl === undefined ? {} : { url: config.tokenizerUrl }),
    ...(apiKey === undefined ? {} : { apiKey }),
    timeoutSeconds: config.tokenizerTimeoutSeconds,
    userAgent: config.tokenizerUserAgent,
    cache: sharedCountCache({ maxEntries: config.cacheEntries }),
  };
}
