/**
 * The Backend contract's types, re-exported by every entry whose API names
 * a Backend, so that each entry stands on its own.
 *
 * @module
 */
export type {
  Backend,
  CapField,
  CapReading,
  CountOptions,
  CountResult,
  JsonObject,
  OutputFieldOptions,
  OutputLimitOptions,
  ReadCapsOptions,
  RequestKind,
} from "./backend.ts";
