/**
 * How a bundled backend reads the configuration: the variables it requires,
 * and the HTTP options every HTTP backend takes from the same variables.
 *
 * @module
 */
import type { Config } from "../../config/mod.ts";
import { ConfigError } from "../../core/config_error.ts";
import { type CountCache, sharedCountCache } from "../../cache/mod.ts";

/**
 * The values `backend` requires, by variable name, once each is set.
 *
 * @throws {ConfigError} Listing every one that is missing.
 */
export function requireConfig<K extends string>(
  backend: string,
  values: Readonly<Record<K, string | undefined>>,
): Readonly<Record<K, string>> {
  const issues = Object.entries(values).filter(([, value]) =>
    value === undefined
  ).map(([variable]) => ({
    variable,
    rule: `is required by the '${backend}' backend`,
  }));
  if (issues.length > 0) throw new ConfigError(issues);
  return values as Readonly<Record<K, string>>;
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
