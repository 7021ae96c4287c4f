/**
 * The types a backend entry's API names (the Backend contract, the count
 * cache and the configuration its factory reads), re-exported by each
 * backend entry so that it stands on its own.
 *
 * @module
 */
export type * from "../../core/contract_types.ts";
export type {
  COUNT_CACHE_CORE,
  CountCache,
  CountCacheCore,
  CountCacheKind,
  CountCacheStats,
  CountTier,
  EngineCall,
} from "../../cache/mod.ts";
export type { HttpCountOptions } from "./http_count_options.ts";
export type { BackendConfig } from "./config.ts";
export type { ConfigIssue } from "../../core/config_error.ts";
