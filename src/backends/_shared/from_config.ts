/**
 * How a bundled backend reads the configuration: its name and the settings
 * it requires, declared once beside its factory, and the HTTP options every
 * HTTP backend takes from the same settings.
 *
 * @module
 */
import type { Backend } from "../../core/backend.ts";
import { type Config, CONFIG_VARIABLES } from "../../core/config.ts";
import { ConfigError } from "../../core/config_error.ts";
import { type CountCache, sharedCountCache } from "../../cache/mod.ts";

/**
 * A bundled backend as the registry plugs it in: its name, the settings it
 * cannot work without (the registry reports their variables), and its factory.
 */
export interface BundledBackend<K extends keyof Config = keyof Config> {
  readonly name: string;
  readonly requires: readonly K[];
  readonly factory: (config: Config) => Backend;
}

/** The values of `K`, each known to be set. */
export type RequiredSettings<K extends keyof Config> = {
  readonly [P in K]-?: Exclude<Config[P], undefined>;
};

/**
 * The settings `backend` requires, read from `config`.
 *
 * @throws {ConfigError} Listing the variable of every one that is unset.
 */
export function requireConfig<K extends keyof Config>(
  backend: Pick<BundledBackend<K>, "name" | "requires">,
  config: Config,
): RequiredSettings<K> {
  const issues = backend.requires
    .filter((key) => config[key] === undefined)
    .map((key) => ({
      variable: CONFIG_VARIABLES[key].name,
      rule: `is required by the '${backend.name}' backend`,
    }));
  if (issues.length > 0) throw new ConfigError(issues);
  return config as Config & RequiredSettings<K>;
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
  config: Config,
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
