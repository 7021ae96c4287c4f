/**
 * Typed configuration from environment variables, and the backend it
 * selects: {@linkcode loadConfig} reads `INCONTEXT_*` variables (and the
 * original plugin's legacy aliases), applies the defaults and checks every
 * rule at once, so a bad environment fails at startup with one
 * {@linkcode ConfigError} that lists every problem. {@linkcode backends}
 * binds each backend name to a lazy factory: `backends.load(config.backend,
 * config)` imports and builds the selected backend alone, and
 * {@linkcode loadBackendModules} imports third-party modules that register
 * more names.
 *
 * @example Loading the configuration of a vLLM deployment
 * ```ts
 * import { loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const config = loadConfig({
 *   INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
 *   INCONTEXT_COMPRESSION_WINDOW_TOKENS: "64000",
 * });
 * strictEqual(config.backend, "vllm");
 * strictEqual(config.compressionWindowTokens, 64000);
 * strictEqual(config.minOutputTokens, 4096);
 * ```
 *
 * @module
 */
export type { Config } from "./settings.ts";
// The parts the configuration is assembled from, each declared by the layer that reads it.
export type { BudgetConfig } from "../core/budget_config.ts";
export type { ChainConfig } from "./backend_choice.ts";
export type { PluginConfig } from "./plugins.ts";
export type { HermesConfig } from "../bridges/hermes/config.ts";
export type { ProxyConfig } from "../proxy/config.ts";
export type { ServerConfig } from "../server/config.ts";
export type { ReplicaConfig } from "../replicas/config.ts";
export type { LogConfig } from "./log_config.ts";
export { ConfigError, type ConfigIssue } from "../core/config_error.ts";
export { loadConfig, type LoadConfigOptions } from "./load_config.ts";
export { backends } from "../backends/registry.ts";
export {
  createBackendRegistry,
  DuplicateBackendError,
  UnknownBackendError,
} from "../backends/backend_registry.ts";
export type {
  BackendFactory,
  BackendPluginOptions,
  BackendRegistry,
} from "../backends/backend_registry.ts";
export type { BackendConfig } from "../backends/_shared/config.ts";
export { loadBackendModules } from "./plugins.ts";
export type { LoadBackendModulesOptions } from "./plugins.ts";
