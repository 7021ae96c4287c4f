/**
 * A server's bounds from the variables `serve` reads, for the commands that
 * load no proxy configuration.
 *
 * @module
 */
import type { ConfigIssue } from "../core/config_error.ts";
import { defaultsOf } from "../_internal/setting.ts";
import { SERVER_SETTINGS, type ServerConfig } from "../server/config.ts";
import { readSettings } from "../config/read_settings.ts";

// Where a server listens and how it stops are each command's own.
const { listen: _listen, shutdownGraceSeconds: _grace, ...LIMITS } =
  SERVER_SETTINGS;

/** The bounds of what the server reads, the same variables as `serve`'s. */
export type ServerLimits = Omit<
  ServerConfig,
  "listen" | "shutdownGraceSeconds"
>;

/**
 * Reads the server's bounds from the environment as `serve` does (the same
 * rules and defaults), adding each bad one to `issues`.
 */
export function serverLimits(
  env: Record<string, string | undefined>,
  issues: ConfigIssue[],
): ServerLimits {
  return {
    ...defaultsOf<ServerLimits>(LIMITS),
    ...readSettings(LIMITS, env, issues).values,
  };
}
