/**
 * What the counting backends' tests share: catching a CountError, reading
 * an error's cause chain, the canary checks that secrets never leak, the
 * fault loops run against the protocol fakes, and the conformance runner.
 *
 * @module
 */
import { ok, rejects, strictEqual, throws } from "node:assert/strict";
import type { Backend, JsonObject } from "../../src/core/backend.ts";
import {
  backendConformanceCases,
  type BackendConformanceOptions,
} from "../../src/testing/backend_conformance.ts";
import { COUNT_FAULTS } from "../../src/testing/server_kit.ts";
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

/**
 * Two steps: none of the `expected` errors (their cause chains) and no log
 * line (with a debug line among them) holds any of `secrets`.
 */
export async function leakFreeSteps(
  t: Deno.TestContext,
  errors: readonly unknown[],
  expected: number,
  logs: { readonly lines: readonly string[] },
  secrets: readonly string[],
): Promise<void> {
  await t.step("no error, cause or stack holds the key or the prompt", () => {
    strictEqual(errors.length, expected);
    assertNoLeak(errors.flatMap(errorTexts), secrets);
  });
  await t.step("no log line holds the key, the prompt or the URL", () => {
    ok(logs.lines.some((line) => line.includes(" debug ")));
    assertNoLeak(logs.lines, secrets);
  });
}

/** The faults of the OpenAI and SGLang fakes that fail a count at once. */
export const PLAIN_FAULTS = COUNT_FAULTS.filter((fault) =>
  fault !== "none" && fault !== "slow"
);

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

/** A server on port 0 that redirects every request (307) to `target`, path kept. */
export function redirectTo(target: string): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request) =>
      Response.redirect(`${target}${new URL(request.url).pathname}`, 307),
  );
}

/** A `fetch` that records each call's URL and headers, then fetches. */
export function fetchSpy(): {
  fetch: typeof fetch;
  sent: { url: string; headers: Headers }[];
} {
  const sent: { url: string; headers: Headers }[] = [];
  const spy: typeof fetch = (input, init) => {
    sent.push({ url: String(input), headers: new Headers(init?.headers) });
    return fetch(input, init);
  };
  return { fetch: spy, sent };
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
 * One step per fault that answers badly (an HTTP error, a broken body):
 * each fails the count after exactly one request, `"refused"` after none,
 * and an `http-NNN` fault's message ends with `HTTP NNN`.
 */
export async function statusFaultSteps<F extends string>(
  t: Deno.TestContext,
  server: FaultyServer<F>,
  faults: readonly F[],
  count: () => Promise<unknown>,
): Promise<void> {
  for (const fault of faults) {
    await t.step(fault, async () => {
      server.fault = fault;
      server.requests.length = 0;
      const error = await countError(count());
      strictEqual(server.requests.length, fault === "refused" ? 0 : 1);
      if (fault.startsWith("http-")) {
        ok(error.message.endsWith(`HTTP ${fault.slice(5)}`), error.message);
      }
    });
  }
}

/** A step: the caller's abort ends a count the `"slow"` fault holds. */
export async function abortWhileSlowStep<F extends string>(
  t: Deno.TestContext,
  name: string,
  server: FaultyServer<F>,
  count: (signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  await t.step(name, async () => {
    server.fault = "slow" as F;
    server.requests.length = 0;
    const controller = new AbortController();
    const counting = count(controller.signal);
    await untilRequested(server);
    controller.abort(new Error("gave up"));
    const error = await countError(counting);
    ok(error.message.includes("aborted"), error.message);
  });
}

/**
 * One step per `[fault, phrase]`: the count fails with a message holding
 * `phrase`, after exactly one request; then `"refused"` fails as a failed
 * request and `"slow"` as a timeout (with `slowCount`, a short timeout).
 */
export async function phraseFaultSteps<F extends string>(
  t: Deno.TestContext,
  server: FaultyServer<F>,
  faults: readonly (readonly [F, string])[],
  count: () => Promise<unknown>,
  slowCount: () => Promise<unknown>,
): Promise<void> {
  for (const [fault, phrase] of faults) {
    await t.step(fault, async () => {
      server.fault = fault;
      server.requests.length = 0;
      const error = await countError(count());
      ok(error.message.includes(phrase), error.message);
      strictEqual(server.requests.length, 1);
    });
  }
  await t.step("refused", async () => {
    server.fault = "refused" as F;
    const error = await countError(count());
    ok(error.message.includes("request failed"), error.message);
  });
  await t.step("slow: the timeout ends the count", async () => {
    server.fault = "slow" as F;
    const error = await countError(slowCount());
    ok(error.message.includes("did not answer within"), error.message);
  });
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

/** What {@linkcode pathFaultCanary} runs against. */
export interface PathFaultCanary<F extends string> {
  /** Serves the fake, requiring `apiKey` when given. */
  readonly serve: (
    options: { apiKey?: string },
  ) => Promise<PathFaultyServer<F> & AsyncDisposable>;
  /** A backend on `url` with `apiKey`, no cache, and the given timeout. */
  readonly backend: (
    url: string,
    options: { apiKey?: string; timeoutSeconds?: number },
  ) => { count(request: object, options: object): Promise<unknown> };
  /** The faults to fail the count with, each on a path or on all. */
  readonly faults: readonly (readonly [F, string | undefined])[];
  /** The count options; a count with `contextLength: 4096` must fail. */
  readonly options: { readonly contextLength: number };
  /** Checks what a successful count returned. */
  readonly counted: (count: unknown) => void;
  /** How many requests one count sends. */
  readonly requestsPerCount: number;
}

/**
 * The canary for a self-hosted server with a key: counts succeed and fail
 * (every fault, a wrong context length, an unreachable host, a secret in
 * the URL's query); the server sees the key and prompt, but no error (its
 * whole cause chain) or log line holds the key, the prompt or the host;
 * and a redirect to another origin does not carry the key.
 */
export async function pathFaultCanary<F extends string>(
  t: Deno.TestContext,
  spec: PathFaultCanary<F>,
  logs: { readonly lines: readonly string[] },
): Promise<void> {
  const { secret } = canary();
  const prompt = `my password is ${secret.slice(10)}-prompt`;
  const request = { messages: [{ role: "user", content: prompt }] };
  await using server = await spec.serve({ apiKey: secret });
  const errors: unknown[] = [];
  const keyed = (timeoutSeconds = 10, url = server.url) =>
    spec.backend(`${url}/?key=${secret}`, { apiKey: secret, timeoutSeconds });

  await t.step("a successful count", async () => {
    spec.counted(await keyed().count(request, spec.options));
  });

  for (const [fault, path] of spec.faults) {
    await t.step(`${fault} ${path ?? ""}`, async () => {
      server.fault = fault;
      server.faultPath = path;
      const counting = keyed(fault === "slow" ? 0.05 : 10)
        .count(request, spec.options);
      errors.push(await countError(counting));
      server.fault = "none" as F;
    });
  }

  await t.step("a wrong context length and an unreachable host", async () => {
    errors.push(
      await countError(keyed().count(request, { contextLength: 4096 })),
    );
    errors.push(
      await countError(
        keyed(10, "http://127.0.0.1:1").count(request, spec.options),
      ),
    );
  });

  await t.step(
    "the server saw the key and the prompt; no error or log did",
    () => {
      ok(server.requests.some((r) => r.text.includes(prompt)));
      ok(
        server.requests.every((r) =>
          r.headers["authorization"] === `Bearer ${secret}`
        ),
      );
      ok(logs.lines.length > 0);
      assertNoLeak(
        [...logs.lines, ...errors.flatMap(errorTexts)],
        [secret, secret.slice(10), "127.0.0.1"],
      );
    },
  );

  await t.step(
    "a redirect to another origin is not followed: nothing reaches it",
    async () => {
      await using elsewhere = await spec.serve({});
      await using redirect = redirectTo(elsewhere.url);
      await rejects(
        spec.backend(`http://127.0.0.1:${redirect.addr.port}`, {
          apiKey: secret,
        }).count(request, spec.options),
        { name: "CountRedirectError" },
      );
      strictEqual(elsewhere.requests.length, 0);
    },
  );
}

/** What {@linkcode hostedCanarySteps} runs against. */
export interface HostedCanary<F extends string> {
  /** The fake, requiring `secret` as its key. */
  readonly server: FaultyServer<F>;
  /** A backend on `url` with the key, no cache, and `fetch`. */
  readonly make: (url: string, fetch: typeof globalThis.fetch) => Backend;
  /** A request whose text holds the prompt. */
  readonly request: JsonObject;
  /** The count options. */
  readonly options: { readonly contextLength: number };
}

/**
 * The canary for a hosted API: a successful count, a 500 whose body echoes
 * the key and prompt (and budget() falling back), an unreachable host, and
 * a secret in the URL's query; neither the key nor the prompt appears in
 * an error's cause chain or a log line. Returns what the backend sent.
 */
export async function hostedCanarySteps<F extends string>(
  t: Deno.TestContext,
  spec: HostedCanary<F>,
  secrets: readonly string[],
  logs: { readonly lines: readonly string[] },
): Promise<{ url: string; headers: Headers }[]> {
  const { server, request, options } = spec;
  const spy = fetchSpy();
  const make = (url: string) => spec.make(url, spy.fetch);
  const errors: unknown[] = [];
  // The URL is read after the fault is set: "refused" changes it.
  const fail = async (fault: F, query = "") => {
    server.fault = fault;
    const backend = make(`${server.url}${query}`);
    errors.push(await countError(backend.count(request, options)));
  };

  await t.step("a successful count", async () => {
    ok(Number(await make(server.url).count(request, options)) > 0);
  });
  await t.step("a 500 whose body echoes the key and prompt", async () => {
    await fail("http-500" as F);
    const result = await budget(request, {
      window: Math.floor(options.contextLength / 2),
      contextLength: options.contextLength,
      backend: make(server.url),
    });
    strictEqual(result.source, "rough-fallback");
  });
  await t.step("an unreachable host", async () => {
    await fail("refused" as F);
  });
  await t.step("a URL whose query holds the secret", async () => {
    await fail("http-500" as F, `/?key=${secrets[0]}`);
    server.fault = "none" as F;
  });
  await t.step("neither appears in errors or logs", () => {
    const texts = errors.flatMap(errorTexts);
    ok(texts.length > 0 && logs.lines.length > 0);
    assertNoLeak([...texts, ...logs.lines], secrets);
  });
  return spy.sent;
}

/**
 * Asserts that the backend sent `header` with `secret` on every call, only
 * to `path`, and the secret in no other header nor in any recorded body.
 */
export function assertKeyOnlyTo(
  sent: readonly { url: string; headers: Headers }[],
  recorded: readonly { readonly text: string }[],
  expected: { path: string; header: string; secret: string },
): void {
  const { path, header, secret } = expected;
  ok(sent.length >= 4);
  for (const { url, headers } of sent) {
    strictEqual(new URL(url).pathname, path);
    strictEqual(headers.get(header), secret);
    for (const [name, value] of headers) {
      if (name !== header) ok(!value.includes(secret), name);
    }
  }
  for (const request of recorded) ok(!request.text.includes(secret));
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

/** A step: on a fresh server, a count whose signal is already aborted fails with `message`, sending nothing. */
export async function abortedSignalStep<S extends AsyncDisposable>(
  t: Deno.TestContext,
  serve: () => Promise<S & { readonly requests: readonly unknown[] }>,
  count: (server: S, signal: AbortSignal) => Promise<unknown>,
  message: string,
): Promise<void> {
  await t.step("an aborted signal makes no HTTP call", async () => {
    await using server = await serve();
    const error = await countError(count(server, AbortSignal.abort()));
    strictEqual(error.message, message);
    strictEqual(server.requests.length, 0);
  });
}

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

/** What {@linkcode bearerHeaderSteps} runs against. */
export interface BearerHeaders {
  /** Serves the fake, requiring `apiKey` when given. */
  readonly serve: (
    options: { apiKey?: string },
  ) => Promise<FaultyServer<string> & AsyncDisposable>;
  /** A backend on `url`, without a cache. */
  readonly backend: (
    url: string,
    options: { apiKey?: string; userAgent?: string },
  ) => Backend;
  /** The count's request and options. */
  readonly request: JsonObject;
  readonly options: { readonly contextLength: number };
  /** How many requests one count sends. */
  readonly requestsPerCount: number;
  /** A User-Agent to set and check, if the backend takes one. */
  readonly userAgent?: string;
  /** The server's name in the 401 step, and the count's message then. */
  readonly server: string;
  readonly wrongKeyMessage: string;
}

/**
 * Steps: every request carries JSON and the default User-Agent, without
 * Authorization; with a key (and a User-Agent) and a query string, every
 * request carries the bearer key and the query; a wrong key's 401 fails.
 */
export async function bearerHeaderSteps(
  t: Deno.TestContext,
  spec: BearerHeaders,
): Promise<void> {
  const { request, options, userAgent } = spec;
  await t.step("defaults: no Authorization", async () => {
    await using server = await spec.serve({});
    await spec.backend(server.url, {}).count(request, options);
    assertEverySent(server.requests, { headers: DEFAULT_HEADERS });
  });

  const keyed = userAgent === undefined
    ? "an API key and a query string"
    : "an API key, a User-Agent and a query string";
  await t.step(keyed, async () => {
    await using server = await spec.serve({ apiKey: "sk-test" });
    const agent = userAgent === undefined ? {} : { userAgent };
    await spec.backend(`${server.url}/?tenant=a`, {
      apiKey: "sk-test",
      ...agent,
    }).count(request, options);
    strictEqual(server.requests.length, spec.requestsPerCount);
    assertEverySent(server.requests, {
      search: "?tenant=a",
      headers: {
        authorization: "Bearer sk-test",
        ...(userAgent === undefined ? {} : { "user-agent": userAgent }),
      },
    });
  });

  await t.step(
    `a wrong key: ${spec.server}'s 401 fails the count`,
    async () => {
      await using server = await spec.serve({ apiKey: "sk-right" });
      const error = await countError(
        spec.backend(server.url, { apiKey: "sk-wrong" }).count(
          request,
          options,
        ),
      );
      strictEqual(error.message, spec.wrongKeyMessage);
    },
  );
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

/** `[fault, "HTTP NNN"]` for each `http-NNN` fault, for {@linkcode phraseFaultSteps}. */
export function httpPhrases<F extends string>(
  faults: readonly F[],
): [F, string][] {
  return faults.map((fault) => [fault, `HTTP ${fault.slice(5)}`]);
}

/** The phrases a count's error holds when the answer's body or transport breaks. */
export const BROKEN_BODY_PHRASES = [
  ["non-json", "non-JSON"],
  ["non-object", "non-object"],
  ["truncated-json", "non-JSON"],
  ["reset", "request failed"],
  ["oversized", "more than 65536 bytes"],
] as const;

/** Asserts that `build` throws a ConfigError naming `variable` among its issues. */
export function assertRequires(build: () => unknown, variable: string): void {
  throws(
    build,
    (error: unknown) =>
      error instanceof ConfigError &&
      error.issues.some((issue) => issue.variable === variable),
  );
}
