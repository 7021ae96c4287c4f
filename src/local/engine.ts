/**
 * The local counting engine as a count cache's core runs it: one call by
 * operation name, answered with data that survives a structured clone.
 * The calls are made by the backends that count locally, through the
 * cache's engine channel.
 *
 * @module
 */
import type { JsonObject, RequestKind } from "../core/request.ts";
import { CountError } from "../core/errors.ts";
import { type HostStore, LocalModels, type ModelSpec } from "./models.ts";
import type { DecodeForm } from "./tokenize.ts";

/** A call to the local engine. */
export type LocalCall =
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
export interface LocalEngine {
  /**
   * Runs one call.
   *
   * @throws {CountError} For an unknown operation, or a failed count; its message holds no prompt text.
   */
  run(call: LocalCall): Promise<unknown>;
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
export function createLocalEngine(
  store: HostStore,
  options: { readonly ownsPayloads?: boolean } = {},
): LocalEngine {
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
            new CountError("The local engine has no such operation"),
          );
      }
    },
    get loads() {
      return models.loads;
    },
  };
}
