/**
 * The frame of every counting backend's `count()`: the context length
 * checked, the request checked to be a JSON object, every failure turned
 * into a CountError whose message and cause carry only type names, and one
 * debug line per count naming the source and never the request.
 *
 * @module
 */
import type { Logger } from "@logtape/logtape";
import type {
  CountOptions,
  CountResult,
  JsonObject,
} from "../../core/backend.ts";
import {
  CountError,
  countErrorOf,
  UnsupportedTemplateError,
} from "../../core/errors.ts";
import { errorType, safeCause } from "../../core/error_type.ts";
import { checkContextLength } from "./http_count.ts";
import { isJsonObject } from "../../core/request.ts";

/** What one backend's counts name in their errors and logs. */
export interface CountGuardOptions {
  /** Names the backend in the `contextLength` RangeError, such as `"the vLLM backend"`. */
  readonly what: string;
  /** Opens the message of an unexpected failure, such as `"vLLM /tokenize count failed"`. */
  readonly failure: string;
  readonly logger: Logger;
}

/** Counts one checked request; `contextLength` is a positive safe integer. */
export type GuardedCount<T> = (
  request: JsonObject,
  contextLength: number,
) => Promise<T>;

/** One count to run in the frame. */
export interface GuardedCall {
  /** The backend's source, read at each count. */
  readonly source: string;
  readonly request: JsonObject;
  readonly options: CountOptions;
}

/** Runs one count in the frame. */
export type CountGuard = <T extends number | CountResult>(
  call: GuardedCall,
  count: GuardedCount<T>,
) => Promise<T>;

/**
 * Creates the count frame of one backend.
 *
 * @throws {RangeError} (from the frame) If `options.contextLength` is not a positive integer.
 * @throws {CountError} (from the frame) On every other failure, the thrown
 * CountError (or TemplateRejectedError) as it is.
 */
export function countGuard(guard: CountGuardOptions): CountGuard {
  const { what, failure, logger } = guard;
  // Each construct a template uses that the renderer lacks, warned once.
  const warned = new Set<string>();
  return async function guardedCount({ source, request, options }, count) {
    const contextLength = checkContextLength(what, options?.contextLength);
    try {
      if (!isJsonObject(request)) {
        throw new CountError(
          "Cannot count the request as it is not a JSON object",
        );
      }
      const counted = await count(request, contextLength);
      logger.debug("Counted {count} prompt tokens with {source}", {
        count: typeof counted === "number" ? counted : counted.tokens,
        source: typeof counted === "number" ? source : counted.source ?? source,
      });
      return counted;
    } catch (error) {
      const known = countErrorOf(error);
      const thrown = known instanceof CountError
        ? known
        : new CountError(`${failure}: ${errorType(error)}`, {
          cause: safeCause(error),
        });
      if (
        thrown instanceof UnsupportedTemplateError &&
        !warned.has(thrown.construct) && warned.size < 100
      ) {
        warned.add(thrown.construct);
        logger.warn(
          "The {source} count falls back: the chat template uses {construct}, which the local renderer does not support",
          { source, construct: thrown.construct },
        );
      }
      logger.debug("The {source} count failed: {errorType} ({causeType})", {
        source,
        errorType: thrown.name,
        causeType: errorType(thrown.cause),
      });
      throw thrown;
    }
  };
}
