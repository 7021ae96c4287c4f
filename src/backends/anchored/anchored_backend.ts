// The `anchored` backend: its class, and how it is built from the configuration.
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CountOptions,
  type CountResult,
  type JsonObject,
} from "../../core/backend.ts";
import { AnchorStore } from "../../anchors/store.ts";
import { anchorKeys, anchorParts } from "../../anchors/keys.ts";
import { type Estimator, roughEstimate } from "../../core/estimate.ts";
import { CountError, TemplateRejectedError } from "../../core/errors.ts";
import { errorType, safeCause } from "../../core/error_type.ts";
import { checkContextLength } from "../_shared/http_count.ts";
import { effectiveField } from "../../core/request.ts";
import type { BackendConfig } from "../_shared/config.ts";
import type { BundledBackend } from "../_shared/from_config.ts";

const logger = getLogger(["incontext", "anchored"]);

/** The label of anchored counts. */
const SOURCE = "usage-anchor";

/** Options for {@linkcode AnchoredBackend}. */
export interface AnchoredBackendOptions {
  /**
   * The usage anchors to read: the store the proxy (its `anchors` option) or
   * `budgetedFetch` (its `anchors` option) records responses' usage into.
   */
  readonly anchors: AnchorStore;
  /**
   * Estimates the messages appended since the anchor (given a request
   * holding only those), and a whole request without an anchor.
   *
   * @default roughEstimate
   */
  readonly estimate?: Estimator;
  /**
   * An exact counter for the appended messages (and for a whole request
   * without an anchor), such as a `LocalBackend` over the served model's
   * tokenizer files. When it fails, the part is estimated instead.
   *
   * @default undefined: the appended part is estimated
   */
  readonly count?: Backend;
}

/**
 * Counts a chat request from the usage of the conversation's last response
 * (Hermes' rule): `prompt_tokens + completion_tokens` of the longest
 * recorded prefix of the conversation, plus a count of only the messages
 * appended since, by `count` when given, else estimated. The count says how
 * much of it is estimated, so budget() keeps a margin of at most that part
 * (and at most F) free instead of F on the whole prompt.
 *
 * Without an anchor (a conversation's first turn, a conversation the store
 * has forgotten, a Completions or Responses request) the whole request is
 * counted the same way, so it is all estimated unless `count` is given: the
 * margin then covers all of it, up to F, as for budget()'s own rough
 * fallback. Nothing is thrown for a missing anchor, since it is this
 * backend's normal first turn, not a failure worth a warning.
 *
 * A conversation matches its anchor when its model, tools and leading
 * messages equal those recorded (compared in a canonical form, so an SDK
 * re-serialising an echoed message still matches). The count is exact up
 * to the anchor only if the server renders a conversation's history as it
 * rendered that turn: a template that drops earlier reasoning from the
 * history (Qwen3 does) makes the anchor overcount by the dropped reasoning.
 *
 * @example Anchored on the last response's usage
 * ```ts
 * import { AnchoredBackend, AnchorStore, recordResponseUsage } from "@incontext/incontext/anchored";
 * import { budget } from "@incontext/incontext";
 * import { deepStrictEqual, strictEqual } from "node:assert/strict";
 *
 * const anchors = new AnchorStore();
 * const backend = new AnchoredBackend({ anchors });
 * const turn1 = { model: "m", messages: [{ role: "user", content: "Hi" }] };
 * recordResponseUsage(anchors, turn1, { usage: { prompt_tokens: 900, completion_tokens: 100 } });
 * const turn2 = {
 *   model: "m",
 *   messages: [
 *     ...turn1.messages,
 *     { role: "assistant", content: "Hello!" },
 *     { role: "user", content: "Summarise the file." }, // about 5 tokens
 *   ],
 * };
 * deepStrictEqual(
 *   await backend.count(turn2, { contextLength: 65536 }),
 *   { tokens: 1005, estimatedTokens: 5 },
 * );
 * // The margin covers the 5 estimated tokens only, not F = 1024.
 * const result = await budget(turn2, { window: 55705, contextLength: 65536, backend });
 * strictEqual(result.maxTokens, 55705 - 1005 - 5);
 * ```
 */
export class AnchoredBackend extends Backend {
  /** The label of anchored counts: `"usage-anchor"`. */
  override readonly source: string = SOURCE;
  readonly #anchors: AnchorStore;
  readonly #estimate: Estimator;
  readonly #count: Backend | undefined;

  /**
   * Creates an anchored backend. It reads `anchors`; something else records
   * into it (the proxy, `budgetedFetch`, or {@linkcode recordResponseUsage}).
   *
   * @param options The anchor store, the estimator and an optional exact counter.
   * @throws {TypeError} If `anchors` is not an AnchorStore, `estimate` not a
   * function, or `count` not a Backend.
   */
  constructor(options: AnchoredBackendOptions) {
    super();
    const what = "Cannot create the anchored backend as";
    if (!(options?.anchors instanceof AnchorStore)) {
      throw new TypeError(`${what} 'anchors' must be an AnchorStore`);
    }
    const { estimate = roughEstimate, count } = options;
    if (typeof estimate !== "function") {
      throw new TypeError(`${what} 'estimate' must be a function`);
    }
    if (count !== undefined && typeof count?.count !== "function") {
      throw new TypeError(`${what} 'count' must be a Backend`);
    }
    this.#anchors = options.anchors;
    this.#estimate = estimate;
    this.#count = count;
  }

  /**
   * The store this backend reads; hand it to the proxy's `anchors` option.
   *
   * @example Handing the store on
   * ```ts
   * import { AnchoredBackend, AnchorStore } from "@incontext/incontext/anchored";
   * import { strictEqual } from "node:assert/strict";
   *
   * const anchors = new AnchorStore();
   * strictEqual(new AnchoredBackend({ anchors }).anchors, anchors);
   * ```
   */
  get anchors(): AnchorStore {
    return this.#anchors;
  }

  /**
   * Counts `request` from its conversation's usage anchor plus the messages
   * appended since.
   *
   * @param request A chat completions request body, never mutated.
   * @param options The context length, the request's kind and an abort signal.
   * @returns The tokens, and how many of them are estimated.
   * @throws {RangeError} If `options.contextLength` is not a positive integer.
   * @throws {CountError} When the count was aborted or the estimate failed.
   * @throws {TemplateRejectedError} When `count` reports that the served
   * template rejects a request it counted whole.
   *
   * @example A first turn is all estimated
   * ```ts
   * import { AnchoredBackend, AnchorStore } from "@incontext/incontext/anchored";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new AnchoredBackend({ anchors: new AnchorStore() });
   * const request = { model: "m", messages: [{ role: "user", content: "What is 2+2?" }] };
   * deepStrictEqual(
   *   await backend.count(request, { contextLength: 8192 }),
   *   { tokens: 3, estimatedTokens: 3 },
   * );
   * ```
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<CountResult> {
    checkContextLength("the anchored backend", options?.contextLength);
    if (options.signal?.aborted) {
      throw new CountError("The anchored count was aborted", {
        cause: safeCause(options.signal.reason),
      });
    }
    const kind = options.kind ?? "chat";
    const conversation = kind === "chat"
      ? anchorKeys(this.#anchors, request)
      : undefined;
    const parts = conversation && anchorParts(this.#anchors, conversation);
    if (parts === undefined) {
      const whole = await this.#countPart(request, options, true);
      logger.debug(
        "no usage anchor: model={model} tokens={tokens} estimated={estimated}",
        { model: modelLabel(request), ...whole },
      );
      return { tokens: whole.tokens, estimatedTokens: whole.estimated };
    }
    const { anchoredTokens, appended } = parts;
    const part = appended.length === 0
      ? { tokens: 0, estimated: 0 }
      : await this.#countPart(appendedRequest(request, appended), {
        ...options,
        kind: "chat",
      }, false);
    logger.debug(
      "usage anchor: model={model} anchored={anchored} appended_messages={messages} appended_tokens={tokens} estimated={estimated}",
      {
        model: modelLabel(request),
        anchored: anchoredTokens,
        messages: appended.length,
        ...part,
      },
    );
    return {
      tokens: anchoredTokens + part.tokens,
      estimatedTokens: part.estimated,
    };
  }

  /**
   * Forgets the exact counter's cached counts. The anchors stay: they are
   * the conversations' usage, shared with the proxy, not cached counts.
   *
   * @returns A promise that settles once the clear has taken effect.
   *
   * @example Clearing
   * ```ts
   * import { AnchoredBackend, AnchorStore } from "@incontext/incontext/anchored";
   *
   * await new AnchoredBackend({ anchors: new AnchorStore() }).clearCache();
   * ```
   */
  override clearCache(): Promise<void> {
    return this.#count?.clearCache() ?? Promise.resolve();
  }

  /** The part's tokens and estimated tokens: counted exactly when possible, else estimated. */
  async #countPart(
    request: JsonObject,
    options: CountOptions,
    whole: boolean,
  ): Promise<{ tokens: number; estimated: number }> {
    if (this.#count !== undefined) {
      try {
        const counted = checkedCount(
          await this.#count.count(request, options),
        );
        if (counted !== undefined) return counted;
        throw new TypeError("the exact counter returned an invalid count");
      } catch (error) {
        // A template's verdict on a partial conversation says nothing about
        // the whole one (it may require a leading user turn).
        if (whole && error instanceof TemplateRejectedError) throw error;
        if (options.signal?.aborted) {
          throw new CountError("The anchored count was aborted", {
            cause: safeCause(error),
          });
        }
        logger.warn(
          "exact count of the {part} failed, estimating it: model={model} error={error}",
          {
            part: whole ? "request" : "appended messages",
            model: modelLabel(request),
            error: errorType(error),
          },
        );
      }
    }
    let estimate: number;
    try {
      estimate = this.#estimate(request);
    } catch (error) {
      throw new CountError("The anchored count's estimate failed", {
        cause: safeCause(error),
      });
    }
    if (!Number.isFinite(estimate)) {
      throw new CountError("The anchored count's estimate is not a number");
    }
    const tokens = Math.max(0, Math.ceil(estimate));
    return { tokens, estimated: tokens };
  }
}

/** A count as tokens and estimated tokens, or undefined when it is not a valid count. */
function checkedCount(
  value: number | CountResult,
): { tokens: number; estimated: number } | undefined {
  if (typeof value === "number") {
    return Number.isSafeInteger(value) && value >= 0
      ? { tokens: value, estimated: 0 }
      : undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { tokens, estimatedTokens } = value;
  return Number.isSafeInteger(tokens) && tokens >= 0 &&
      Number.isSafeInteger(estimatedTokens) && estimatedTokens >= 0 &&
      estimatedTokens <= tokens
    ? { tokens, estimated: estimatedTokens }
    : undefined;
}

/**
 * A request holding only the appended messages. Tools stay out: the anchor
 * already counted their definitions. The model and template arguments stay,
 * since they shape how the new messages and the generation prompt render.
 */
function appendedRequest(
  request: JsonObject,
  appended: readonly unknown[],
): JsonObject {
  const model = effectiveField(request, "model");
  const kwargs = effectiveField(request, "chat_template_kwargs");
  return {
    ...(model === undefined ? {} : { model }),
    messages: appended,
    ...(kwargs === undefined ? {} : { chat_template_kwargs: kwargs }),
  };
}

function modelLabel(request: JsonObject): string {
  const model = effectiveField(request, "model");
  return typeof model === "string" ? model.slice(0, 200) : "unknown";
}

/**
 * Builds the `anchored` backend from the configuration: no URL or key is
 * needed; its store holds `INCONTEXT_ANCHOR_ENTRIES` anchors. Hand
 * `backend.anchors` to the proxy so that it records into the same store.
 *
 * @param config The loaded configuration.
 * @returns A new {@linkcode AnchoredBackend} with its own store.
 *
 * @example From the environment
 * ```ts
 * import { AnchoredBackend, anchoredFromConfig } from "@incontext/incontext/anchored";
 * import { loadConfig } from "@incontext/incontext/config";
 * import { ok } from "node:assert/strict";
 *
 * const backend = anchoredFromConfig(loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" }));
 * ok(backend instanceof AnchoredBackend);
 * ```
 */
export function anchoredFromConfig(config: BackendConfig): AnchoredBackend {
  return new AnchoredBackend({
    anchors: new AnchorStore({ maxEntries: config.anchorEntries }),
  });
}

/** The `anchored` backend as the bundled registry plugs it in: it requires no setting. */
export const ANCHORED: BundledBackend<never> = {
  name: "anchored",
  requires: [],
  factory: anchoredFromConfig,
};
