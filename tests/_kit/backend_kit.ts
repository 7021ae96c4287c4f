/**
 * What the counting backends' tests share besides the HTTP suite
 * (`src/testing/http_backend_conformance.ts`, run by
 * tests/backends/_shared/http_conformance_test.ts): catching a CountError, the
 * canary text, per-endpoint fault loops, and the conformance runner.
 *
 * @module
 */
import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import type { Backend, JsonObject } from "../../src/core/backend.ts";
import {
  backendConformanceCases,
  type BackendConformanceOptions,
} from "../../src/testing/backend_conformance.ts";
import { budget } from "../../src/core/budget.ts";
import { ConfigError } from "../../src/core/config_error.ts";
import { CountError, TemplateRejectedError } from "../../src/core/errors.ts";
import { VERSION } from "../../src/core/version.ts";
import { errorTexts } from "../../src/testing/error_texts.ts";

export { errorTexts };

/** A request a fake recorded, as the tests read it. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly search: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/** A fake served on a local port, as the tests drive it. */
export interface FaultyServer<F extends string> {
  readonly url: string;
  readonly requests: RecordedRequest[];
  fault: F;
}

/** A served fake whose fault can be limited to one path. */
export interface PathFaultyServer<F extends string> extends FaultyServer<F> {
  faultPath: string | undefined;
}

/** The headers every count request carries by default. */
export const DEFAULT_HEADERS: Readonly<Record<string, string | undefined>> = {
  "content-type": "application/json",
  "user-agent": `incontext/${VERSION}`,
  "authorization": undefined,
};

/** What {@linkcode assertEverySent} expects of each request; `undefined` headers must be absent. */
export interface SentShape {
  readonly method?: string;
  readonly path?: string;
  readonly search?: string;
  readonly headers?: Readonly<Record<string, string | undefined>>;
}

/** Asserts that there are requests and that each matches `expected`. */
export function assertEverySent(
  requests: readonly RecordedRequest[],
  expected: SentShape,
): void {
  ok(requests.length > 0);
  for (const request of requests) {
    const { method, path, search, headers = {} } = expected;
    if (method !== undefined) strictEqual(request.method, method);
    if (path !== undefined) strictEqual(request.path, path);
    if (search !== undefined) strictEqual(request.search, search);
    for (const [name, value] of Object.entries(headers)) {
      strictEqual(request.headers[name], value, name);
    }
  }
}

/** Asserts that a chat completion was accepted (200) with `usage.prompt_tokens` equal to `promptTokens`. */
export async function assertAcceptedWith(
  answer: Response | Promise<Response>,
  promptTokens: number | undefined,
): Promise<void> {
  const response = await answer;
  strictEqual(response.status, 200);
  strictEqual((await response.json()).usage.prompt_tokens, promptTokens);
}

/**
 * budget() while `server` answers `fault`: it must fall back to the rough
 * estimate. The fault is cleared afterwards; returns the result.
 */
export async function budgetUnderFault<F extends string>(
  server: { fault: F },
  fault: F,
  request: JsonObject,
  options: Parameters<typeof budget>[1],
): Promise<Awaited<ReturnType<typeof budget>>> {
  server.fault = fault;
  try {
    const result = await budget(request, options);
    strictEqual(result.source, "rough-fallback");
    return result;
  } finally {
    server.fault = "none" as F;
  }
}

/** The CountError `promise` rejects with; fails the test otherwise. */
export async function countError(
  promise: Promise<unknown>,
): Promise<CountError> {
  let caught: unknown;
  await rejects(promise, (error: unknown) => {
    caught = error;
    return error instanceof CountError;
  });
  return caught as CountError;
}

/** Asserts that no text holds any of `secrets`. */
export function assertNoLeak(
  texts: readonly string[],
  secrets: readonly string[],
): void {
  for (const text of texts) {
    for (const secret of secrets) ok(!text.includes(secret), text);
  }
}

/** A secret shaped like an API key and a prompt that quotes part of it. */
export function canary(): { secret: string; prompt: string } {
  const secret = `sk-canary-${crypto.randomUUID()}`;
  return { secret, prompt: `prompt-canary-${secret.slice(10)}` };
}

/** Resolves once `server` has received a request. */
export async function untilRequested(
  server: { readonly requests: readonly unknown[] },
): Promise<void> {
  while (server.requests.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Runs each conformance case, with `extra` options, as a step of `t`. */
export async function runConformance(
  t: Deno.TestContext,
  options: BackendConformanceOptions,
  extra: Partial<BackendConformanceOptions> = {},
): Promise<void> {
  for (const c of backendConformanceCases({ ...options, ...extra })) {
    await t.step({ name: c.name, ignore: c.skip !== undefined, fn: c.run });
  }
}

/**
 * One step per `[fault, path, message]` on a fresh server: the count fails
 * with exactly `message`, not as a rejected template, asking each endpoint
 * at most once and `path` last.
 */
export async function pathFaultSteps<F extends string>(
  t: Deno.TestContext,
  serve: () => Promise<PathFaultyServer<F> & AsyncDisposable>,
  faults: readonly (readonly [F, string, string])[],
  count: (server: PathFaultyServer<F>) => Promise<unknown>,
): Promise<void> {
  for (const [fault, path, message] of faults) {
    await t.step(`${fault} on ${path}`, async () => {
      await using server = await serve();
      server.fault = fault;
      server.faultPath = path;
      const error = await countError(count(server));
      strictEqual(error.message, message);
      ok(!(error instanceof TemplateRejectedError));
      // One request per endpoint up to the failing one: no retries.
      const sent = server.requests.map((r) => r.path);
      strictEqual(new Set(sent).size, sent.length);
      if (fault !== "refused") strictEqual(sent.at(-1), path);
    });
  }
}

/** An OpenAI agent turn: a system prompt, a question, a tool call and its result. */
export const AGENT_TURN: readonly JsonObject[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Weather?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: "call_1",
      type: "function",
      function: { name: "weather", arguments: '{"city":"Paris"}' },
    }],
  },
  { role: "tool", tool_call_id: "call_1", content: "Sunny" },
];

/** The tool {@linkcode AGENT_TURN} calls. */
export const WEATHER_TOOL: JsonObject = {
  type: "function",
  function: { name: "weather", parameters: { type: "object" } },
};

/** What {@linkcode abortWhileHeldStep} runs. */
export interface AbortWhileHeld {
  /** The path whose request the caller aborts while the fake holds it. */
  readonly path: string;
  /** A fake handler under the `"slow"` fault. */
  readonly fake: {
    readonly fetch: typeof globalThis.fetch;
    faultPath: string | undefined;
  };
  /** A backend that fetches through `fetch`. */
  readonly backend: (fetch: typeof globalThis.fetch) => Backend;
  /** The count's request and options. */
  readonly request: JsonObject;
  readonly options: { readonly contextLength: number };
  /** The CountError's message. */
  readonly message: string;
}

/** A step: the caller aborting while the fake holds `path` fails the count with `message`. */
export async function abortWhileHeldStep(
  t: Deno.TestContext,
  spec: AbortWhileHeld,
): Promise<void> {
  await t.step(`an abort while ${spec.path} is held`, async () => {
    spec.fake.faultPath = spec.path;
    const controller = new AbortController();
    const backend = spec.backend((input, init) => {
      if (String(input).includes(spec.path)) {
        queueMicrotask(() => controller.abort());
      }
      return spec.fake.fetch(input, init);
    });
    const error = await countError(
      backend.count(spec.request, {
        ...spec.options,
        signal: controller.signal,
      }),
    );
    strictEqual(error.message, spec.message);
  });
}

/** Runs the conformance suite against a served fake and one failing with HTTP 500. */
export async function servedConformance<S extends AsyncDisposable>(
  t: Deno.TestContext,
  serve: (options: { fault?: "http-500" }) => Promise<S>,
  backend: (server: S) => Backend,
  contextLength: number,
): Promise<void> {
  await using server = await serve({});
  await using failing = await serve({ fault: "http-500" });
  await runConformance(t, {
    create: () => backend(server),
    createFailing: () => backend(failing),
    contextLength,
  });
}

/** An OpenAI tool call, as an assistant message lists it. */
export function toolCall(id: string, name: string, args: unknown): JsonObject {
  return { id, type: "function", function: { name, arguments: args } };
}

/** One conversion test: an OpenAI request and the provider body it becomes. */
export interface ConversionCase {
  readonly name: string;
  readonly request: JsonObject;
  /** The expected body (for Gemini, the generateContentRequest without its model). */
  readonly expected: JsonObject;
}

/** A `fetch` that records each URL and answers `answer` as JSON, without a network. */
export function urlRecorder(answer: unknown): {
  fetch: typeof globalThis.fetch;
  urls: string[];
} {
  const urls: string[] = [];
  const fetch: typeof globalThis.fetch = (input) => {
    urls.push(String(input));
    return Promise.resolve(Response.json(answer));
  };
  return { fetch, urls };
}

/** A conformance `grow`: appends `turn(text)` to the list in `field`. */
export function growWith(
  field: string,
  turn: (text: string) => readonly JsonObject[],
): (request: JsonObject, text: string) => JsonObject {
  return (request, text) => ({
    ...request,
    [field]: [...(request[field] as unknown[]), ...turn(text)],
  });
}

/** Asserts that `build` throws a ConfigError naming `variable` among its issues. */
export function assertRequires(build: () => unknown, variable: string): void {
  throws(
    build,
    (error: unknown) =>
      error instanceof ConfigError &&
      error.issues.some((issue) => issue.variable === variable),
  );
}
