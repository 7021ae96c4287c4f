/**
 * Every setting, assembled from the records each layer declares beside the
 * module that reads it: `loadConfig()` reads them, `--help` lists them and
 * docs/configuration.md tabulates them, group by group.
 *
 * @module
 */
import {
  defaultsOf,
  type Settings,
  type SettingsOf,
} from "../_internal/setting.ts";
import { BUDGET_SETTINGS, type BudgetConfig } from "../core/budget_config.ts";
import {
  BACKEND_SETTINGS,
  type BackendConfig,
} from "../backends/_shared/config.ts";
import {
  HERMES_SETTINGS,
  type HermesConfig,
} from "../bridges/hermes/config.ts";
import { REPLICA_SETTINGS, type ReplicaConfig } from "../replicas/config.ts";
import { PROXY_SETTINGS, type ProxyConfig } from "../proxy/config.ts";
import { SERVER_SETTINGS, type ServerConfig } from "../server/config.ts";
import { CHAIN_SETTINGS, type ChainConfig } from "./backend_choice.ts";
import { PLUGIN_SETTINGS, type PluginConfig } from "./plugins.ts";
import { LOG_SETTINGS, type LogConfig } from "./log_config.ts";

/**
 * The validated configuration: a plain, immutable object with a property
 * per setting. Each setting's variable, default and meaning are listed in
 * docs/configuration.md and by `incontext serve --help`.
 *
 * @example Deriving a configuration for a test
 * ```ts
 * import { type Config, loadConfig } from "@incontext/incontext/config";
 * import { strictEqual } from "node:assert/strict";
 *
 * const base = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * const config: Config = { ...base, model: "Qwen/Qwen3-8B" };
 * strictEqual(config.model, "Qwen/Qwen3-8B");
 * strictEqual(config.cacheEntries, 4096);
 * ```
 */
export type Config =
  & BudgetConfig
  & ChainConfig
  & BackendConfig
  & PluginConfig
  & HermesConfig
  & ProxyConfig
  & ServerConfig
  & ReplicaConfig
  & LogConfig;

/** A group of settings as the documentation presents them. */
export interface SettingGroup {
  /** The group's name, such as `the proxy`. */
  readonly title: string;
  readonly settings: Settings;
}

const BACKENDS = {
  ...CHAIN_SETTINGS,
  ...BACKEND_SETTINGS,
  ...PLUGIN_SETTINGS,
};

/** The settings, group by group, in the order they are documented and read. */
export const SETTING_GROUPS: readonly SettingGroup[] = [
  { title: "the budget", settings: BUDGET_SETTINGS },
  { title: "the backends", settings: BACKENDS },
  { title: "Hermes", settings: HERMES_SETTINGS },
  { title: "the proxy", settings: PROXY_SETTINGS },
  { title: "the server", settings: SERVER_SETTINGS },
  { title: "replicas", settings: REPLICA_SETTINGS },
  { title: "logs", settings: LOG_SETTINGS },
];

/** The configuration's properties that a record sets: all but the chain's rest. */
export type SettingKey = Exclude<keyof Config, "backendFallbacks">;

/** Every setting, by the property it sets. */
export const SETTINGS: SettingsOf<Pick<Config, SettingKey>> = Object.freeze({
  ...BUDGET_SETTINGS,
  ...BACKENDS,
  ...HERMES_SETTINGS,
  ...PROXY_SETTINGS,
  ...SERVER_SETTINGS,
  ...REPLICA_SETTINGS,
  ...LOG_SETTINGS,
});

/**
 * The configuration with every default and nothing from the environment:
 * what `loadConfig({})` starts from.
 */
export const DEFAULT_CONFIG: Config = defaultsOf<Pick<Config, SettingKey>>(
  SETTINGS,
);
