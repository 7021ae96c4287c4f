/**
 * The prompt tokens of a conversation before its request exists: the
 * backend's count, else the rough estimate, and in either case whether the
 * count is exact and, when not, why (a failed count names its rule: a
 * context length the server contradicts, a server down, an estimate).
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { Backend } from "../../core/backend.ts";
import { ROUGH, validCount } from "../../core/prompt_count.ts";
import { CountError, TemplateRejectedError } from "../../core/errors.ts";
import { errorType } from "../../core/error_type.ts";
import { type Estimator, roughEstimate } from "../../core/estimate.ts";
import type { Conversation } from "./read.ts";

const logger = getLogger(["incontext", "preflight"]);

/** How a conversation is counted. */
export interface CountConversationOptions {
  readonly backend: Backend;
  readonly contextLength: number;
  readonly estimate?: Estimator | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** A conversation's count, and why it is not exact when it is not. */
export interface ConversationCount {
  /** P, or undefined when neither count worked or the template refuses it. */
  readonly tokens: number | undefined;
  /** The backend's source, `"rough-fallback"`, or `"none"`. */
  readonly source: string;
  /** Why `tokens` is not the server's exact count, when it is not. */
  readonly reason?: string;
}

/** Counts the conversation's request; never throws for its content or the backend. */
export async function countConversation(
  conversation: Conversation,
  options: CountConversationOptions,
): Promise<ConversationCount> {
  const { backend, contextLength, signal } = options;
  const { request, kind } = conversation;
  const source = sourceOf(backend);
  let failure: string;
  try {
    const counted = validCount(
      await backend.count(request, {
        contextLength,
        kind,
        ...(signal ? { signal } : {}),
      }),
      source,
    );
    if (counted !== undefined) {
      const inexact = [
        conversation.inexact,
        counted.estimated > 0
          ? `${counted.estimated} of its ${counted.tokens} tokens are the backend's estimate`
          : undefined,
      ].filter((why) => why !== undefined);
      return {
        tokens: counted.tokens,
        source: counted.source,
        ...(inexact.length > 0 ? { reason: inexact.join("; ") } : {}),
      };
    }
    failure = "the backend returned an invalid count";
  } catch (error) {
    if (error instanceof TemplateRejectedError) {
      return { tokens: undefined, source, reason: error.message };
    }
    failure = signal?.aborted
      ? "the count was aborted"
      : error instanceof CountError
      ? error.message
      : `the exact count failed (${errorType(error)})`;
    logger.warn(
      "exact count failed, using the rough estimate: source={source} error={error}",
      { source, error: errorType(error) },
    );
  }
  return estimated(conversation, options.estimate ?? roughEstimate, failure);
}

function estimated(
  conversation: Conversation,
  estimate: Estimator,
  failure: string,
): ConversationCount {
  try {
    const value = estimate(conversation.request);
    if (!Number.isFinite(value)) throw new TypeError("invalid estimate");
    return {
      tokens: Math.max(1, Math.ceil(value)),
      source: ROUGH,
      reason: `a rough estimate: ${failure}`,
    };
  } catch (error) {
    logger.error(
      "exact count and rough estimate failed: estimate_error={error}",
      { error: errorType(error) },
    );
    return {
      tokens: undefined,
      source: "none",
      reason: `no count: ${failure}, and the estimate failed`,
    };
  }
}

function sourceOf(backend: Backend): string {
  try {
    const { source } = backend;
    if (typeof source === "string" && source !== "") return source;
  } catch {
    // A source getter that throws names nothing.
  }
  return "unknown-backend";
}
