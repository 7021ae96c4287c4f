/**
 * The Backend contract: how incontext counts a request's prompt tokens and
 * how a server reads and limits output caps.
 *
 * @module
 */
import { readCallerCap, writeCap } from "./caps.ts";
import { detectKind } from "./kind.ts";
import type { CapField, JsonObject, RequestKind } from "./request.ts";

export type { CapField, JsonObject, RequestKind } from "./request.ts";

/** Options handed to {@linkcode Backend.count}. */
export interface CountOptions {
  /** The served context length, in tokens. A backend may check it against the server's. */
  readonly contextLength: number;
  /**
   * The request's shape. A backend that cannot count a kind throws, so the
   * caller falls back to an estimate.
   *
   * @default "chat"
   */
  readonly kind?: RequestKind;
  /** Aborts the count; the count then rejects. */
  readonly signal?: AbortSignal;
}

/** Options handed to {@linkcode Backend.outputBudgetLimit}. */
export interface OutputLimitOptions {
  /** The served context length, in tokens. */
  readonly contextLength: number;
  /**
   * The request's shape.
   *
   * @default "chat"
   */
  readonly kind?: RequestKind;
  /**
   * The prompt's tokens as counted (or estimated), for a server whose limit
   * depends on the prompt (SGLang: prompt + max_tokens <= context - 1).
   * budget() always passes it.
   *
   * @default undefined: not known
   */
  readonly promptTokens?: number;
}

/** Options handed to {@linkcode Backend.outputBudgetField}. */
export interface OutputFieldOptions {
  /**
   * The request's shape: an endpoint may read another field than the one
   * the caller used (Chat Completions ignores `max_output_tokens`).
   *
   * @default "chat"
   */
  readonly kind?: RequestKind;
}

/**
 * A count that says how much of it is estimated: a usage-anchored count is
 * exact up to the last response and estimated for what was appended since.
 * budget() keeps a margin of at most `estimatedTokens` (and at most F) free.
 */
export interface CountResult {
  /** The prompt tokens, exact and estimated together. */
  readonly tokens: number;
  /** How many of `tokens` are estimated, from 0 (exact) to `tokens` (all estimated). */
  readonly estimatedTokens: number;
  /**
   * The label of this count when it differs from the backend's `source`
   * (a backend that counts some kinds exactly and estimates others).
   *
   * @default the backend's source
   */
  readonly source?: string;
}

/**
 * A server's own count of a request beside the count incontext used for it:
 * the prompt tokens a response's `usage` reports, and the exact count the
 * request was budgeted with.
 */
export interface CountCheck {
  /** The request's model as the server reads it (an `extra_body.model` wins), or `undefined` without one. */
  readonly model: string | undefined;
  /** The label of the count: the source of the backend that made it, or its count result's own. */
  readonly source: string;
  /** The prompt tokens incontext counted. */
  readonly counted: number;
  /** The prompt tokens the server reported in the response's `usage`. */
  readonly served: number;
}

/** The caller's output cap as the server reads it, and the wire field to write. */
export interface CapReading {
  /** The smallest positive cap the server would read, or `undefined` without one. */
  readonly value: number | undefined;
  /** The wire field budget() writes: a top-level name, or a dotted path such as `generationConfig.maxOutputTokens`. */
  readonly field: string;
  /**
   * A cap field the caller sent that the server does not read as a cap
   * but refuses (0, a negative, a fraction, an array), as a path: budget()
   * then leaves the request as it is, for the server to answer.
   */
  readonly invalid?: string;
}

/** Options handed to {@linkcode Backend.readCaps}. */
export interface ReadCapsOptions {
  /** The request's shape. */
  readonly kind: RequestKind;
  /** The OpenAI cap field to use when the caller gave none. */
  readonly defaultField: CapField;
}

/**
 * Counts the exact prompt tokens of a request, and describes how the server
 * reads output caps. Subclass it to add a backend, and register the subclass
 * with {@linkcode backends}.
 *
 * @example Counting with a constant
 * ```ts
 * import { Backend, type JsonObject } from "@incontext/incontext";
 * import { strictEqual } from "node:assert/strict";
 *
 * class FixedBackend extends Backend {
 *   readonly source = "fixed";
 *   count(_request: JsonObject): Promise<number> {
 *     return Promise.resolve(42);
 *   }
 * }
 * const backend: Backend = new FixedBackend();
 * strictEqual(await backend.count({ messages: [] }, { contextLength: 8192 }), 42);
 * strictEqual(backend.coerceOutputBudget("42"), undefined);
 * ```
 */
export abstract class Backend {
  /**
   * A stable, non-sensitive label for where counts come from, such as
   * `"vllm-tokenize"`. Never a URL or a secret: it is logged.
   */
  abstract readonly source: string;

  /**
   * The server's own name for its context length when every count compares
   * it with the configured one and fails with a `ContextLengthMismatchError`
   * when they differ, such as `"vLLM max_model_len"`.
   *
   * @returns The name, or undefined when the server reports none.
   */
  get servedContext(): string | undefined {
    return undefined;
  }

  /**
   * Counts the prompt tokens of `request` exactly.
   *
   * @param request The request body, never mutated.
   * @param options The context length and an abort signal.
   * @returns The exact prompt token count, or a {@linkcode CountResult}
   * saying how much of it is estimated.
   * @throws On any doubt: budget() then falls back to a rough estimate.
   *
   * @example Counting, and failing so that budget() estimates instead
   * ```ts
   * import { Backend, budget, CountError, type JsonObject } from "@incontext/incontext";
   * import { strictEqual } from "node:assert/strict";
   *
   * class PerMessageBackend extends Backend {
   *   readonly source = "per-message";
   *   count(request: JsonObject): Promise<number> {
   *     return Array.isArray(request.messages)
   *       ? Promise.resolve(10 * request.messages.length)
   *       : Promise.reject(new CountError("Cannot count a request without messages"));
   *   }
   * }
   * const backend: Backend = new PerMessageBackend();
   * strictEqual(await backend.count({ messages: [{}, {}] }, { contextLength: 8192 }), 20);
   * const result = await budget({ prompt: "Hi" }, { window: 8000, contextLength: 8192, backend });
   * strictEqual(result.source, "rough-fallback");
   * ```
   */
  abstract count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<number | CountResult>;

  /**
   * Forgets cached counts. A count in flight during the clear still reaches
   * its caller but is not stored.
   *
   * @returns A promise that settles once the clear has taken effect.
   * @default does nothing, for a backend without a cache
   *
   * @example A backend with its own count cache
   * ```ts
   * import { Backend, type CountOptions, type JsonObject } from "@incontext/incontext";
   * import { createCountCache } from "@incontext/incontext/cache";
   * import { strictEqual } from "node:assert/strict";
   *
   * class LengthBackend extends Backend {
   *   readonly source = "length";
   *   readonly cache = createCountCache({ inProcess: true });
   *   count(request: JsonObject, options: CountOptions): Promise<number> {
   *     const json = JSON.stringify([options.contextLength, request]);
   *     return this.cache.getOrCount(json, () => Promise.resolve(json.length));
   *   }
   *   override clearCache(): Promise<void> {
   *     return this.cache.clear();
   *   }
   * }
   * const backend = new LengthBackend();
   * await backend.count({ messages: [] }, { contextLength: 8192 });
   * await backend.clearCache();
   * strictEqual((await backend.cache.stats()).entries, 0);
   * await backend.cache[Symbol.asyncDispose]();
   * ```
   */
  clearCache(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Hears, after a response whose `usage` reports the prompt tokens of a
   * request the proxy counted exactly, both numbers. A `BackendChain` moves
   * a model whose count differs to its next backend.
   *
   * @param _check The model, the count's label and both numbers.
   * @default does nothing
   *
   * @example Keeping the differences
   * ```ts
   * import { type CountCheck } from "@incontext/incontext";
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const differences: CountCheck[] = [];
   * const backend = new (class extends FakeBackend {
   *   override countChecked(check: CountCheck): void {
   *     if (check.counted !== check.served) differences.push(check);
   *   }
   * })();
   * backend.countChecked({ model: "m", source: "fake", counted: 10, served: 12 });
   * strictEqual(differences.length, 1);
   * ```
   */
  countChecked(_check: CountCheck): void {}

  /**
   * Why this backend's counts of `model` are estimates, when it knows the
   * server builds another prompt than the one it counts (vLLM renders
   * gpt-oss through Harmony, not the template its `/tokenize` renders);
   * budget() then prefers a usage anchor.
   *
   * @param _model A model name, or `undefined` for the configured model.
   * @returns The reason, safe to log, or `undefined` while counts are exact.
   *
   * @example
   * ```ts
   * import { Backend } from "@incontext/incontext";
   * import { strictEqual } from "node:assert/strict";
   *
   * class Split extends Backend {
   *   readonly source = "split";
   *   count = () => Promise.resolve(100);
   *   override estimateReason(model?: string) {
   *     return model === "remote" ? "rendered by the server" : undefined;
   *   }
   * }
   * strictEqual(new Split().estimateReason("local"), undefined);
   * ```
   */
  estimateReason(_model: string | undefined): string | undefined {
    return undefined;
  }

  /**
   * Maps a cap field to the field this server reads.
   *
   * @param field The field incontext would write.
   * @param _options The request's kind.
   * @returns The field to write on the wire.
   * @default identity
   *
   * @example A server that reads only `max_tokens`
   * ```ts
   * import { Backend, budget, type CapField } from "@incontext/incontext";
   * import { strictEqual } from "node:assert/strict";
   *
   * class LegacyBackend extends Backend {
   *   readonly source = "legacy";
   *   count(): Promise<number> {
   *     return Promise.resolve(100);
   *   }
   *   override outputBudgetField(_field: CapField): string {
   *     return "max_tokens";
   *   }
   * }
   * const request = { messages: [], max_completion_tokens: 8192 };
   * const result = await budget(request, { window: 8000, contextLength: 8192, backend: new LegacyBackend() });
   * strictEqual(result.request.max_tokens, 7900);
   * strictEqual(result.request.max_completion_tokens, undefined);
   * ```
   */
  outputBudgetField(field: CapField, _options?: OutputFieldOptions): string {
    return field;
  }

  /**
   * Reads a cap value as this server would.
   *
   * @param value A cap field's value from the request.
   * @returns A positive integer, or `undefined` when the server would not treat it as a cap.
   * @default a positive, non-boolean integer number; anything else is `undefined`
   *
   * @example The default reading, which FakeBackend keeps
   * ```ts
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend();
   * strictEqual(backend.coerceOutputBudget(512), 512);
   * strictEqual(backend.coerceOutputBudget("512"), undefined);
   * strictEqual(backend.coerceOutputBudget(0), undefined);
   * strictEqual(backend.coerceOutputBudget(true), undefined);
   * ```
   */
  coerceOutputBudget(value: unknown): number | undefined {
    return typeof value === "number" && Number.isSafeInteger(value) && value > 0
      ? value
      : undefined;
  }

  /**
   * The largest output cap this server accepts for `request`, beyond the
   * compression window.
   *
   * @param _request The request body.
   * @param _options The context length.
   * @returns The limit, or `undefined` for none.
   * @default undefined
   *
   * @example A server that never writes more than 6000 tokens
   * ```ts
   * import { Backend, budget } from "@incontext/incontext";
   * import { strictEqual } from "node:assert/strict";
   *
   * class ShortBackend extends Backend {
   *   readonly source = "short";
   *   count(): Promise<number> {
   *     return Promise.resolve(100);
   *   }
   *   override outputBudgetLimit(): number {
   *     return 6000;
   *   }
   * }
   * const result = await budget({ messages: [] }, { window: 8000, contextLength: 8192, backend: new ShortBackend() });
   * strictEqual(result.request.max_tokens, 6000);
   * ```
   */
  outputBudgetLimit(
    _request: JsonObject,
    _options: OutputLimitOptions,
  ): number | undefined {
    return undefined;
  }

  /**
   * The kind this backend reads `request` as, or `undefined` when it cannot
   * budget that shape (budget() then leaves the request unchanged). A
   * backend for another provider's shape (Gemini `contents`) overrides it.
   *
   * @param request The request body.
   * @returns The kind, or `undefined`.
   * @default `messages` array: chat; `prompt` string: completion; `input` string or array: Responses
   *
   * @example The OpenAI shapes
   * ```ts
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { strictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend();
   * strictEqual(backend.requestKind({ messages: [] }), "chat");
   * strictEqual(backend.requestKind({ prompt: "Once" }), "completion");
   * strictEqual(backend.requestKind({ contents: [] }), undefined);
   * ```
   */
  requestKind(request: JsonObject): RequestKind | undefined {
    return detectKind(request);
  }

  /**
   * Reads the caller's output cap as this server does, and names the field
   * budget() writes. Override it, with {@linkcode Backend.writeCap}, for a
   * request shape whose cap lives elsewhere.
   *
   * @param request The request body.
   * @param options The request's kind and the field to use without a cap.
   * @returns The smallest cap and the wire field.
   * @default the OpenAI aliases (`max_tokens`, `max_completion_tokens`,
   * `max_output_tokens`) at the top level and in `extra_body`, read with
   * {@linkcode Backend.coerceOutputBudget} and mapped with
   * {@linkcode Backend.outputBudgetField}
   *
   * @example The smallest alias wins
   * ```ts
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend();
   * const request = { messages: [], max_tokens: 900, extra_body: { max_completion_tokens: 500 } };
   * deepStrictEqual(
   *   backend.readCaps(request, { kind: "chat", defaultField: "max_tokens" }),
   *   { value: 500, field: "max_tokens" },
   * );
   * ```
   */
  readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    const cap = readCallerCap(
      request,
      (value) => this.coerceOutputBudget(value),
      options.defaultField,
    );
    const field = this.outputBudgetField(cap.field, { kind: options.kind });
    return cap.invalid === undefined
      ? { value: cap.value, field }
      : { value: cap.value, field, invalid: cap.invalid };
  }

  /**
   * Returns a copy of `request` whose output cap is `value`, written to
   * `field` (from {@linkcode Backend.readCaps}); the caller's object is never
   * changed.
   *
   * @param request The request body.
   * @param field The wire field.
   * @param value The cap to write.
   * @returns The rewritten copy.
   * @default writes `field` at the top level and removes every other OpenAI
   * alias at both levels, so the server reads exactly one cap
   *
   * @example One cap left
   * ```ts
   * import { FakeBackend } from "@incontext/incontext/testing";
   * import { deepStrictEqual } from "node:assert/strict";
   *
   * const backend = new FakeBackend();
   * const request = { messages: [], max_completion_tokens: 9000, extra_body: { max_tokens: 8000 } };
   * deepStrictEqual(
   *   backend.writeCap(request, "max_tokens", 700),
   *   { messages: [], extra_body: {}, max_tokens: 700 },
   * );
   * ```
   */
  writeCap(request: JsonObject, field: string, value: number): JsonObject {
    return writeCap(request, field, value);
  }
}
