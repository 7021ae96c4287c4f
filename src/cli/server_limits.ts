/**
 * A server's bounds from the variables `serve` reads, for the commands that
 * load no proxy configuration.
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";
import { DEFAULT_CONFIG } from "../core/config.ts";
import { loadConfig } from "../config/mod.ts";

/** The bounds of what the server reads, the same variables as `serve`'s. */
export interface ServerLimits {
  readonly maxRequestBytes: number;
  readonly maxHeaderBytes: number;
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly keepAliveTimeoutSeconds: number;
  readonly maxConnections: number;
}

/** The variables {@linkcode ServerLimits} come from. */
const LIMIT_VARIABLES = [
  "INCONTEXT_MAX_REQUEST_BYTES",
  "INCONTEXT_MAX_HEADER_BYTES",
  "INCONTEXT_HEADERS_TIMEOUT_SECONDS",
  "INCONTEXT_REQUEST_TIMEOUT_SECONDS",
  "INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS",
  "INCONTEXT_MAX_CONNECTIONS",
] as const;

/**
 * Reads the server's bounds from the environment as `serve` does (the same
 * rules and defaults), adding each bad one to `issues`.
 */
export function serverLimits(
  env: Record<string, string | undefined>,
  issues: ConfigIssue[],
): ServerLimits {
  const own = Object.fromEntries(
    LIMIT_VARIABLES.filter((name) => env[name] !== undefined)
      .map((name) => [name, env[name]]),
  );
  let config: ServerLimits = DEFAULT_CONFIG;
  try {
    // No backend is chosen here: none of its requirements apply.
    config = loadConfig(own, { registry: { requirements: () => [] } });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    issues.push(...error.issues);
  }
  return {
    maxRequestBytes: config.maxRequestBytes,
    maxHeaderBytes: config.maxHeaderBytes,
    headersTimeoutSeconds: config.headersTimeoutSeconds,
    requestTimeoutSeconds: config.requestTimeoutSeconds,
    keepAliveTimeoutSeconds: config.keepAliveTimeoutSeconds,
    maxConnections: config.maxConnections,
  };
}
