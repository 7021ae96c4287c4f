import type { Config } from "../config/mod.ts";
import { VERSION } from "./version.ts";

/**
 * The configuration with every default and nothing from the environment: what
 * `loadConfig({})` yields before validation, and what a backend factory gets
 * when `backends.one()` is called without a configuration.
 */
export const DEFAULT_CONFIG: Config = Object.freeze({
  backend: "vllm",
  tokenizerTimeoutSeconds: 30,
  tokenizerUserAgent: `incontext/${VERSION}`,
  fallbackMarginTokens: 1024,
  minOutputTokens: 4096,
  backendModules: Object.freeze([]) as readonly string[],
  cacheEntries: 4096,
  listen: "127.0.0.1:8787",
  onExhausted: "clamp",
  anchorEntries: 4096,
  anchorTolerance: 0.02,
  maxRequestBytes: 32 * 1024 * 1024,
  upstreamTimeoutSeconds: 600,
  upstreamIdleTimeoutSeconds: 600,
  shutdownGraceSeconds: 30,
});
