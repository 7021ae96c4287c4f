/**
 * The local counting engine as a count cache's core runs it: one call by
 * operation name, answered with data that survives a structured clone.
 * The calls are made by the backends that count locally, through the
 * cache's engine channel.
 *
 * @module
 */
import type { JsonObject, RequestKind } from "../common/request.ts";
import { EngineError } from "../common/errors.ts";
import { type HostStore, LocalModels, type ModelSpec } from "./models.ts";
import type { DecodeForm } from "./tokenize.ts";

/** A call to the local engine. */
export type EngineCall =
  /** Counts a request's `/tokenize` payload: answered with the count. */
  | {
    readonly op: "count";
    readonly spec: ModelSpec;
    readonly kind: RequestKind;
    readonly payload: Record<string, unknown>;
  }
  /** Renders a chat payload's prompt: answered with the text. */
  | {
    readonly op: "render";
    readonly spec: ModelSpec;
    readonly kind: RequestKind;
    readonly payload: Record<string, unknown>;
  }
  /** Loads a model folder: answered with the files' SHA-256. */
  | { readonly op: "load"; readonly spec: ModelSpec }
  /** The ids of a `/tokenize` body. */
  | {
    readonly op: "tokenize";
    readonly spec: ModelSpec;
    readonly body: JsonObject;
  }
  /** The text or token strings of ids. */
  | {
    readonly op: "decode";
    readonly spec: ModelSpec;
    readonly ids: readonly number[];
    readonly form: DecodeForm;
  };

/** The engine: what a count cache's core calls. */
export interface Engine {
  /**
   * Runs one call.
   *
   * @throws {EngineError} For an unknown operation, or a failed count; its message holds no prompt text.
   */
  run(call: EngineCall): Promise<unknown>;
  /** How many model folder loads it started. */
  readonly loads: number;
}

/**
 * Creates the local engine over `store`, where its whole-request and piece
 * counts are kept.
 *
 * @param store The core's store.
 * @param options `ownsPayloads`: the calls are the engine's own copies, never changed after it runs them.
 */
export function createEngine(
  store: HostStore,
  options: { readonly ownsPayloads?: boolean } = {},
): Engine {
  const models = new LocalModels(store, options);
  return {
    run(call) {
      switch (call?.op) {
        case "count":
          return models.count(call);
        case "render":
          return models.render(call);
        case "load":
          return models.load(call.spec);
        case "tokenize":
          return models.tokenize(call.spec, call.body);
        case "decode":
          return models.decode(call.spec, call.ids, call.form);
        default:
          return Promise.reject(
            new EngineError("The local engine has no such operation"),
          );
      }
    },
    get loads() {
      return models.loads;
    },
  };
}
