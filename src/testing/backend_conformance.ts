/**
 * The conformance suite every counting backend passes: the same cases for
 * the bundled backends and for third-party ones, run from any test runner.
 *
 * @module
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import type {
  Backend,
  CapField,
  CountResult,
  JsonObject,
  RequestKind,
} from "../core/backend.ts";
import { budget } from "../core/budget.ts";
import { CountError } from "../core/errors.ts";
import { errorTexts } from "./error_texts.ts";

/** Options for {@linkcode backendConformanceCases}. */
export interface BackendConformanceOptions {
  /** Builds a backend that counts against a working server (called once per case). */
  readonly create: () => Backend;
  /** Builds a backend whose server fails every count (an error status, or unreachable). */
  readonly createFailing: () => Backend;
  /** The served context length: comfortably above the request's count. */
  readonly contextLength: number;
  /**
   * A request this backend counts. Its text should contain
   * {@linkcode CONFORMANCE_MARKER}, which no error may quote.
   *
   * @default a system and a user message, for model "conformance-model"
   */
  readonly request?: JsonObject;
  /**
   * Returns a copy of `request` with a turn holding `text` appended.
   *
   * @default appends an assistant and a user message to `messages`
   */
  readonly grow?: (request: JsonObject, text: string) => JsonObject;
  /**
   * The request's kind.
   *
   * @default "chat"
   */
  readonly kind?: RequestKind;
  /** Cases that cannot apply to this backend: case name to the reason. */
  readonly skip?: Readonly<Record<string, string>>;
}

/** One case of the suite. */
export interface ConformanceCase {
  /** The case's name, stable across versions. */
  readonly name: string;
  /** Why the case is skipped for this backend, when it is. */
  readonly skip?: string;
  /** Runs the case; rejects with an assertion error when the backend breaks the contract. */
  run(): Promise<void>;
}

/** Text the default request carries and no count error may quote. */
export const CONFORMANCE_MARKER = "conformance-marker-7d1f0c";

const DEFAULT_REQUEST: JsonObject = {
  model: "conformance-model",
  messages: [
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: `Say hello. ${CONFORMANCE_MARKER}` },
  ],
};

function defaultGrow(request: JsonObject, text: string): JsonObject {
  const messages = Array.isArray(request.messages) ? request.messages : [];
  return {
    ...request,
    messages: [
      ...messages,
      { role: "assistant", content: "Hello." },
      { role: "user", content: text },
    ],
  };
}

/**
 * The conformance cases for one backend. Run each with your test runner;
 * a case whose `skip` is set states why it does not apply.
 *
 * @param options Factories for a working and a failing backend, and the request to count.
 * @returns The cases, in a stable order.
 *
 * @example Running the suite against a fake backend
 * ```ts
 * import { backendConformanceCases, FakeBackend } from "@incontext/incontext/testing";
 * import { CountError, type JsonObject } from "@incontext/incontext";
 *
 * const length = (request: JsonObject) => JSON.stringify(request).length;
 * const cases = backendConformanceCases({
 *   create: () => new FakeBackend({ count: length }),
 *   createFailing: () => new FakeBackend({ error: new CountError("down") }),
 *   contextLength: 65536,
 * });
 * for (const c of cases) {
 *   if (c.skip === undefined) await c.run();
 * }
 * ```
 */
export function backendConformanceCases(
  options: BackendConformanceOptions,
): ConformanceCase[] {
  const request = options.request ?? DEFAULT_REQUEST;
  const grow = options.grow ?? defaultGrow;
  const kind = options.kind ?? "chat";
  const { contextLength } = options;
  const defaultField: CapField = kind === "responses"
    ? "max_output_tokens"
    : "max_tokens";
  const count = (backend: Backend, body: JsonObject, signal?: AbortSignal) =>
    backend.count(body, {
      contextLength,
      kind,
      ...(signal ? { signal } : {}),
    });
  const tuning = {
    window: contextLength,
    contextLength,
    fallbackMarginTokens: 0,
    minOutputTokens: 1,
    kind,
  };
  const cases: [string, () => Promise<void>][] = [
    ["source is a non-blank label without a URL", () => {
      const { source } = options.create();
      ok(typeof source === "string" && source.trim() !== "", "blank source");
      ok(!source.includes("://"), "the source holds a URL");
      ok(source.length <= 100, "the source is longer than 100 characters");
      return Promise.resolve();
    }],
    ["reads the request's kind", () => {
      strictEqual(options.create().requestKind(request), kind);
      return Promise.resolve();
    }],
    ["counts the request", async () => {
      const counted = tokensOf(await count(options.create(), request));
      ok(counted.tokens > 0, "a non-empty request counted 0 tokens");
    }],
    ["counts the same request the same way twice", async () => {
      const backend = options.create();
      deepStrictEqual(
        tokensOf(await count(backend, request)),
        tokensOf(await count(backend, request)),
      );
    }],
    ["counts a longer conversation as longer", async () => {
      const backend = options.create();
      const shorter = tokensOf(await count(backend, request)).tokens;
      const text = "The quick brown fox jumps over the lazy dog. ".repeat(20);
      const longer = tokensOf(await count(backend, grow(request, text))).tokens;
      ok(longer > shorter, `${longer} is not above ${shorter}`);
    }],
    ["never changes the request", async () => {
      const frozen = deepFreeze(structuredClone(request));
      await count(options.create(), frozen);
      deepStrictEqual(frozen, request);
    }],
    ["fails the count with a CountError when the server fails", async () => {
      await rejects(count(options.createFailing(), request), CountError);
    }],
    ["never quotes the request in a count error", async () => {
      const error = await count(options.createFailing(), request).then(
        () => undefined,
        (error: unknown) => error,
      );
      ok(error !== undefined, "the failing backend counted");
      for (const text of errorTexts(error)) {
        ok(!text.includes(CONFORMANCE_MARKER), "an error quotes the request");
      }
    }],
    ["fails the count when the caller aborts", async () => {
      const controller = new AbortController();
      controller.abort(new Error("caller gave up"));
      await rejects(count(options.create(), request, controller.signal));
    }],
    ["lets budget() fall back when the server fails", async () => {
      const result = await budget(request, {
        ...tuning,
        backend: options.createFailing(),
      });
      strictEqual(result.source, "rough-fallback");
      strictEqual(result.action, "set");
    }],
    ["budgets the request with a cap it reads back", async () => {
      const backend = options.create();
      const result = await budget(request, { ...tuning, backend });
      strictEqual(result.action, "set");
      ok(result.field !== undefined && result.maxTokens !== undefined);
      deepStrictEqual(
        backend.readCaps(result.request, { kind, defaultField }),
        {
          value: result.maxTokens,
          field: result.field,
        },
      );
    }],
    ["writes a cap without changing the request", () => {
      const backend = options.create();
      const frozen = deepFreeze(structuredClone(request));
      const { field } = backend.readCaps(frozen, { kind, defaultField });
      ok(typeof field === "string" && field !== "", "no field to write");
      const written = backend.writeCap(frozen, field, 321);
      deepStrictEqual(frozen, request);
      strictEqual(backend.readCaps(written, { kind, defaultField }).value, 321);
      return Promise.resolve();
    }],
    ["keeps the smallest of the caller's cap and the budget", async () => {
      const backend = options.create();
      const { field } = backend.readCaps(request, { kind, defaultField });
      const capped = backend.writeCap(request, field, 7);
      const result = await budget(capped, { ...tuning, backend });
      strictEqual(result.action, "set");
      strictEqual(result.maxTokens, 7);
    }],
  ];
  return cases.map(([name, check]) => {
    // Always a promise: a synchronous assertion failure becomes a rejection.
    const run = async () => await check();
    const skip = options.skip?.[name];
    return skip === undefined ? { name, run } : { name, skip, run };
  });
}

/** A count as a CountResult, checked against the contract. */
function tokensOf(value: number | CountResult): CountResult {
  const counted = typeof value === "number"
    ? { tokens: value, estimatedTokens: 0 }
    : value;
  ok(
    Number.isSafeInteger(counted.tokens) && counted.tokens >= 0,
    "tokens is not a non-negative integer",
  );
  ok(
    Number.isSafeInteger(counted.estimatedTokens) &&
      counted.estimatedTokens >= 0 &&
      counted.estimatedTokens <= counted.tokens,
    "estimatedTokens is not an integer between 0 and tokens",
  );
  return counted;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) {
      deepFreeze((value as Record<string, unknown>)[key]);
    }
  }
  return value;
}
