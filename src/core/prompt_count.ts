/**
 * The prompt count budget() works with: the backend's exact count, else a
 * usage anchor, else the rough estimate, each with the part of it that is
 * only estimated; a backend's count that is all estimate yields to an anchor
 * too; a request the chat template rejects is told apart.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { CountResult, JsonObject, RequestKind } from "./backend.ts";
import type { BudgetOptions } from "./budget_options.ts";
import { roughEstimate } from "./estimate.ts";
import { errorType } from "./error_type.ts";
import { TemplateRejectedError } from "./errors.ts";
import { modelLabel } from "./request.ts";

const logger = getLogger(["incontext", "budget"]);

/** The label of a count that is a rough estimate. */
export const ROUGH = "rough-fallback";
/** The label of a count from a usage anchor. */
export const ANCHOR = "usage-anchor";

/**
 * The anchor's count when it has a valid one, with its estimated part (the
 * appended messages); an anchor that throws has none.
 */
function anchorCount(
  request: JsonObject,
  options: BudgetOptions,
): Counted | undefined {
  try {
    const anchored = options.anchor?.(request);
    return anchored === undefined ? undefined : validCount(anchored, ANCHOR);
  } catch {
    return undefined;
  }
}

/**
 * The exact count, else the rough estimate, else undefined (both failed);
 * null when the server would reject the request (an estimate would hide that).
 */
export async function countPrompt(
  request: JsonObject,
  options: BudgetOptions & { readonly kind: RequestKind },
  source: string,
): Promise<Counted | null | undefined> {
  let exactError: unknown;
  try {
    const counted = validCount(
      await options.backend.count(request, {
        contextLength: options.contextLength,
        kind: options.kind,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
      source,
    );
    if (counted !== undefined) return preferAnchor(request, options, counted);
    exactError = new TypeError("backend returned an invalid count");
  } catch (error) {
    if (error instanceof TemplateRejectedError) {
      logger.warn(
        "request rejected by the chat template, left unchanged: model={model} source={source} error={error}",
        { model: modelLabel(request), source, error: errorType(error) },
      );
      return null;
    }
    exactError = error;
  }
  // A caller that aborted (a client gone away) is no tokenizer failure.
  const abandoned = options.signal?.aborted === true;
  if (abandoned) {
    logger.debug(
      "count abandoned, the caller aborted: model={model} source={source}",
      { model: modelLabel(request), source },
    );
  }
  const anchored = anchorCount(request, options);
  if (anchored !== undefined) {
    if (!abandoned) {
      logger.info(
        "exact count failed, using the usage anchor: model={model} source={source} error={error}",
        { model: modelLabel(request), source, error: errorType(exactError) },
      );
    }
    return { ...anchored, source: ANCHOR };
  }
  try {
    const estimate = (options.estimate ?? roughEstimate)(request);
    if (!Number.isFinite(estimate)) throw new TypeError("invalid estimate");
    if (!abandoned) {
      logger.warn(
        "exact count failed, using the rough estimate: model={model} source={source} error={error}",
        { model: modelLabel(request), source, error: errorType(exactError) },
      );
    }
    const tokens = Math.max(1, Math.ceil(estimate));
    return { tokens, estimated: tokens, source: ROUGH };
  } catch (error) {
    logger.error(
      "exact count and rough estimate failed, request left unchanged: model={model} source={source} error={error} estimate_error={estimateError}",
      {
        model: modelLabel(request),
        source,
        error: errorType(exactError),
        estimateError: errorType(error),
      },
    );
    return undefined;
  }
}

/**
 * A count that is all estimate (a backend that knows its count is not the
 * server's prompt, or that only estimates) yields to a usage anchor that
 * estimates less of the conversation: the anchor is exact up to the last
 * response, the count nowhere.
 */
function preferAnchor(
  request: JsonObject,
  options: BudgetOptions,
  counted: Counted,
): Counted {
  if (counted.estimated === 0 || counted.estimated < counted.tokens) {
    return counted;
  }
  const anchored = anchorCount(request, options);
  if (anchored === undefined || anchored.estimated >= counted.estimated) {
    return counted;
  }
  logger.debug(
    "the count is an estimate, the usage anchor estimates less: model={model} source={source}",
    { model: modelLabel(request), source: counted.source },
  );
  return { ...anchored, source: ANCHOR };
}

/** A count budget() trusts: tokens, the estimated part, and its label. */
export interface Counted {
  readonly tokens: number;
  readonly estimated: number;
  readonly source: string;
}

/** A backend's count as a {@linkcode Counted}, or undefined when it is not a valid count. */
export function validCount(
  value: number | CountResult,
  source: string,
): Counted | undefined {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0
      ? { tokens: value, estimated: 0, source }
      : undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { tokens, estimatedTokens, source: label } = value;
  if (
    !Number.isSafeInteger(tokens) || tokens < 0 ||
    !Number.isSafeInteger(estimatedTokens) || estimatedTokens < 0 ||
    estimatedTokens > tokens
  ) return undefined;
  const named = typeof label === "string" && label !== "" ? label : source;
  return { tokens, estimated: estimatedTokens, source: named };
}
