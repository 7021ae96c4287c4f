/**
 * The cases every backend that counts over HTTP passes, whatever its
 * protocol: bad answers, an unreachable or silent server, the caller's
 * abort, redirects, where its key goes and what its errors never quote, its
 * cache, and the options it refuses. Each runs against a fake server of the
 * backend's protocol whose `fault` says how it answers.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import type { Backend, JsonObject, RequestKind } from "../core/backend.ts";
import { CountError } from "../core/errors.ts";
import { VERSION } from "../core/version.ts";
import { createCountCache } from "../cache/mod.ts";
import type { HttpCountOptions } from "../backends/_shared/http_count_options.ts";
import {
  CONFORMANCE_MARKER,
  type ConformanceCase,
} from "./backend_conformance.ts";
import { errorTexts } from "./error_texts.ts";

/**
 * A fake server of the backend's protocol, as the suite drives it. Besides
 * the bad answers it is given, `fault` takes `"none"` (it answers well),
 * `"refused"` (its `url` then names a port nobody listens on) and `"slow"`
 * (it holds each request until it is disposed).
 */
export interface HttpConformanceServer extends AsyncDisposable {
  /** The root the backend is given; read after setting `fault`. */
  readonly url: string;
  /** Every request it received, in order. */
  readonly requests: readonly {
    readonly path: string;
    readonly search: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly text: string;
  }[];
  /** How it answers from now on. */
  fault: string;
}

/** The options a backend is built with: its URL, its key and the shared HTTP options. */
export interface HttpConformanceBackendOptions extends HttpCountOptions {
  /** The server's root, or its endpoint for a backend that takes one (vLLM's `/tokenize`). */
  readonly url: string;
  /** The key the backend sends. */
  readonly apiKey?: string;
}

/** Options for {@linkcode httpBackendConformanceCases}. */
export interface HttpBackendConformanceOptions {
  /** Serves a fake of the backend's protocol, which requires `apiKey` when it checks keys. */
  readonly serve: (
    options: { readonly apiKey?: string },
  ) => Promise<HttpConformanceServer>;
  /** Builds the backend; the suite passes `cache: null` unless it tests the cache. */
  readonly backend: (options: HttpConformanceBackendOptions) => Backend;
  /** A request the backend counts over HTTP; its text holds {@linkcode CONFORMANCE_MARKER}. */
  readonly request: JsonObject;
  /**
   * The request's kind.
   *
   * @default "chat"
   */
  readonly kind?: RequestKind;
  /** The served context length. */
  readonly contextLength: number;
  /**
   * The bad answers the fake gives, each a fault of {@linkcode BAD_ANSWERS}
   * or an `http-NNN` status: each must fail the count.
   */
  readonly badAnswers: readonly string[];
  /** The header that carries `apiKey`, and its value. @default a bearer token */
  readonly keyHeader?: (apiKey: string) => readonly [string, string];
  /**
   * The log lines written since the suite began, when the caller captures
   * them: none may quote the key, the prompt or the host.
   */
  readonly logs?: () => readonly string[];
  /** Cases that cannot apply to this backend: case name to the reason. */
  readonly skip?: Readonly<Record<string, string>>;
}

/** What a count's error says for each bad answer a fake can give, besides `http-NNN`'s `HTTP NNN`. */
export const BAD_ANSWERS: Readonly<Record<string, string>> = {
  "non-json": "non-JSON",
  "truncated-json": "non-JSON",
  "non-object": "non-object",
  "oversized": "more than",
  "reset": "request failed",
};

/** The key the suite gives a backend, as a provider's key looks. */
const KEY = "sk-conformance-2b7e41";

/**
 * The HTTP cases for one backend, each run against a fresh fake. Run each
 * with your test runner; a case whose `skip` is set states why it does not
 * apply.
 *
 * @param options The fake, the backend and the request to count.
 * @returns The cases, in a stable order.
 *
 * @example Running the suite against the vLLM backend
 * ```ts
 * import {
 *   CONFORMANCE_MARKER,
 *   httpBackendConformanceCases,
 *   serveFakeVllmTokenizer,
 * } from "@incontext/incontext/testing";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 *
 * const cases = httpBackendConformanceCases({
 *   serve: () => serveFakeVllmTokenizer({ maxModelLen: 8192 }),
 *   backend: (options) => new VllmBackend(options),
 *   request: { messages: [{ role: "user", content: CONFORMANCE_MARKER }] },
 *   contextLength: 8192,
 *   badAnswers: ["http-500", "non-json"],
 * });
 * for (const c of cases) {
 *   if (c.skip === undefined) await c.run();
 * }
 * ```
 */
export function httpBackendConformanceCases(
  options: HttpBackendConformanceOptions,
): ConformanceCase[] {
  const suite = new Suite(options);
  const cases: [string, () => Promise<void>][] = [
    ...options.badAnswers.map((fault): [string, () => Promise<void>] => [
      `fails the count on ${fault}, asking no endpoint twice`,
      () => suite.badAnswer(fault),
    ]),
    ["fails the count when the server is unreachable", () => suite.refused()],
    ["ends a count the server holds at the timeout", () => suite.timeout()],
    [
      "ends a count the server holds when the caller aborts",
      () => suite.abortHeld(),
    ],
    [
      "sends nothing when the signal is already aborted",
      () => suite.abortedBefore(),
    ],
    [
      "follows no redirect: nothing reaches the other origin",
      () => suite.redirect(),
    ],
    [
      "sends JSON, its User-Agent and the key in its header alone",
      () => suite.headers(),
    ],
    [
      "sends the default User-Agent and no key when given none",
      () => suite.defaultHeaders(),
    ],
    [
      "keeps the key, the prompt and the host out of errors and logs",
      () => suite.noLeak(),
    ],
    ["caches a count, and not a failure", () => suite.cache()],
    [
      "refuses a URL that breaks a rule, never echoing it",
      () => Promise.resolve(suite.badUrls()),
    ],
    [
      "refuses a timeout that is not finite and positive",
      () => Promise.resolve(suite.badTimeouts()),
    ],
    [
      "refuses a key or User-Agent that is not a header value, never echoing it",
      () => Promise.resolve(suite.badHeaders()),
    ],
    [
      "rejects a context length that is not a positive integer",
      () => suite.badContextLengths(),
    ],
  ];
  return cases.map(([name, check]) => {
    const run = async () => await check();
    const skip = options.skip?.[name];
    return skip === undefined ? { name, run } : { name, skip, run };
  });
}

/** The cases' shared steps: a fake, a backend on it, a count. */
class Suite {
  readonly #options: HttpBackendConformanceOptions;

  constructor(options: HttpBackendConformanceOptions) {
    this.#options = options;
  }

  #serve(): Promise<HttpConformanceServer> {
    return this.#options.serve({ apiKey: KEY });
  }

  /** Runs `step` against a fresh fake, disposed after. */
  async #on(
    step: (server: HttpConformanceServer) => Promise<void>,
    options: { readonly apiKey?: string } = { apiKey: KEY },
  ): Promise<void> {
    const server = await this.#options.serve(options);
    try {
      await step(server);
    } finally {
      await server[Symbol.asyncDispose]();
    }
  }

  #backend(
    server: { readonly url: string },
    options: Partial<HttpConformanceBackendOptions> = {},
  ): Backend {
    return this.#options.backend({
      url: server.url,
      apiKey: KEY,
      cache: null,
      ...options,
    });
  }

  #count(
    backend: Backend,
    extra: { signal?: AbortSignal; request?: JsonObject } = {},
  ): Promise<unknown> {
    const { contextLength, kind = "chat" } = this.#options;
    return backend.count(extra.request ?? this.#options.request, {
      contextLength,
      kind,
      ...(extra.signal === undefined ? {} : { signal: extra.signal }),
    });
  }

  async badAnswer(fault: string): Promise<void> {
    await this.#on(async (server) => {
      server.fault = fault;
      const error = await countError(this.#count(this.#backend(server)));
      const phrase = /^http-\d+$/.test(fault)
        ? `HTTP ${fault.slice(5)}`
        : BAD_ANSWERS[fault];
      ok(phrase !== undefined, `no phrase is known for ${fault}`);
      ok(error.message.includes(phrase), error.message);
      const paths = server.requests.map((request) => request.path);
      ok(paths.length > 0, "no request reached the server");
      strictEqual(new Set(paths).size, paths.length, `asked again: ${paths}`);
    });
  }

  async refused(): Promise<void> {
    await this.#on(async (server) => {
      server.fault = "refused";
      const error = await countError(this.#count(this.#backend(server)));
      ok(error.message.includes("request failed"), error.message);
    });
  }

  async timeout(): Promise<void> {
    await this.#on(async (server) => {
      server.fault = "slow";
      const backend = this.#backend(server, { timeoutSeconds: 0.05 });
      const error = await countError(this.#count(backend));
      ok(error.message.includes("did not answer within"), error.message);
    });
  }

  async abortHeld(): Promise<void> {
    await this.#on(async (server) => {
      server.fault = "slow";
      const controller = new AbortController();
      const counting = this.#count(this.#backend(server), {
        signal: controller.signal,
      });
      await untilRequested(server);
      controller.abort(new Error("the caller gave up"));
      const error = await countError(counting);
      ok(error.message.includes("aborted"), error.message);
    });
  }

  async abortedBefore(): Promise<void> {
    await this.#on(async (server) => {
      const error = await countError(
        this.#count(this.#backend(server), { signal: AbortSignal.abort() }),
      );
      ok(error.message.includes("aborted"), error.message);
      strictEqual(server.requests.length, 0);
    });
  }

  async redirect(): Promise<void> {
    await this.#on(async (elsewhere) => {
      // node:http, so that the case runs wherever the fakes do.
      const redirect = createServer((request, response) => {
        response.writeHead(307, { location: `${elsewhere.url}${request.url}` });
        response.end();
      });
      await new Promise<void>((resolve) =>
        redirect.listen(0, "127.0.0.1", resolve)
      );
      const { port } = redirect.address() as AddressInfo;
      try {
        await rejects(
          this.#count(this.#backend({ url: `http://127.0.0.1:${port}` })),
          { name: "CountRedirectError" },
        );
      } finally {
        redirect.closeAllConnections();
        await new Promise((resolve) => redirect.close(resolve));
      }
      strictEqual(elsewhere.requests.length, 0);
    });
  }

  async headers(): Promise<void> {
    await this.#on(async (server) => {
      const userAgent = "conformance-agent/1.0";
      await this.#count(
        this.#backend({ url: withQuery(server.url, "tenant", "a") }, {
          userAgent,
        }),
      );
      const [name, value] = this.#keyHeader(KEY);
      ok(server.requests.length > 0, "no request reached the server");
      for (const request of server.requests) {
        strictEqual(request.headers["content-type"], "application/json");
        strictEqual(request.headers["user-agent"], userAgent);
        strictEqual(request.headers[name], value, name);
        ok(request.search.includes("tenant=a"), "the query string was lost");
        for (const [other, text] of Object.entries(request.headers)) {
          if (other !== name) ok(!text.includes(KEY), `the key is in ${other}`);
        }
        ok(!request.text.includes(KEY), "the key is in the body");
      }
    });
  }

  async defaultHeaders(): Promise<void> {
    await this.#on(async (server) => {
      const backend = this.#options.backend({ url: server.url, cache: null });
      await this.#count(backend);
      const [name] = this.#keyHeader(KEY);
      ok(server.requests.length > 0, "no request reached the server");
      for (const request of server.requests) {
        strictEqual(request.headers["user-agent"], `incontext/${VERSION}`);
        strictEqual(request.headers[name], undefined, name);
      }
    }, {});
  }

  async noLeak(): Promise<void> {
    await this.#on(async (server) => {
      const before = this.#options.logs?.().length ?? 0;
      await this.#count(this.#backend(server));
      const errors: unknown[] = [];
      for (const fault of ["http-500", "non-json", "refused", "slow"]) {
        server.fault = fault;
        const backend = this.#backend(
          { url: withQuery(server.url, "key", KEY) },
          {
            timeoutSeconds: fault === "slow" ? 0.05 : 30,
          },
        );
        errors.push(await countError(this.#count(backend)));
      }
      ok(
        server.requests.some((r) => r.text.includes(CONFORMANCE_MARKER)),
        "the prompt never reached the server",
      );
      const logs = this.#options.logs?.().slice(before) ?? [];
      for (const text of [...errors.flatMap(errorTexts), ...logs]) {
        for (const secret of [KEY, CONFORMANCE_MARKER, "127.0.0.1"]) {
          ok(!text.includes(secret), `quoted ${secret}: ${text}`);
        }
      }
    });
  }

  async cache(): Promise<void> {
    await this.#on(async (server) => {
      const cache = createCountCache();
      try {
        const backend = this.#backend(server, { cache });
        const first = await this.#count(backend);
        const asked = server.requests.length;
        deepStrictEqual(await this.#count(backend), first);
        strictEqual(
          server.requests.length,
          asked,
          "a cached count asked again",
        );
        server.fault = "http-500";
        const failing = this.#backend(server, { cache });
        const other = grow(this.#options.request);
        await countError(this.#count(failing, { request: other }));
        server.fault = "none";
        const sent = server.requests.length;
        await this.#count(failing, { request: other });
        ok(server.requests.length > sent, "a failure was cached");
      } finally {
        await cache[Symbol.asyncDispose]();
      }
    });
  }

  badUrls(): void {
    const urls = [
      "ftp://canary.test/",
      "canary.test:8000",
      "http canary",
      "http://canary.test:99999/",
      "http:///canary",
      "http://user:canary@127.0.0.1/",
      "http://canary.test:0/",
      "http://127.0.0.1/#canary",
    ];
    for (const url of urls) {
      throws(() => this.#options.backend({ url, apiKey: KEY }), (error) => {
        ok(error instanceof TypeError, `${url}: ${error}`);
        ok(!error.message.includes("canary"), error.message);
        return true;
      });
    }
  }

  badTimeouts(): void {
    const url = "http://127.0.0.1:8000";
    for (const timeoutSeconds of [0, -1, Number.NaN, Infinity]) {
      throws(
        () => this.#options.backend({ url, apiKey: KEY, timeoutSeconds }),
        RangeError,
      );
    }
  }

  badHeaders(): void {
    const url = "http://127.0.0.1:8000";
    const bad = [
      { apiKey: "" },
      { apiKey: "sk-canary\r\nX: y" },
      { apiKey: KEY, userAgent: "canary\nX: y" },
      { apiKey: KEY, userAgent: " " },
    ];
    for (const options of bad) {
      throws(() => this.#options.backend({ url, ...options }), (error) => {
        ok(error instanceof TypeError, String(error));
        ok(!error.message.includes("canary"), error.message);
        return true;
      });
    }
  }

  async badContextLengths(): Promise<void> {
    await this.#on(async (server) => {
      const backend = this.#backend(server);
      for (const contextLength of [0, -1, 1.5, Number.NaN]) {
        await rejects(
          backend.count(this.#options.request, {
            contextLength,
            kind: this.#options.kind ?? "chat",
          }),
          RangeError,
        );
      }
      strictEqual(server.requests.length, 0);
    });
  }

  #keyHeader(key: string): readonly [string, string] {
    return this.#options.keyHeader?.(key) ?? ["authorization", `Bearer ${key}`];
  }
}

/** The CountError `promise` rejects with; fails the case otherwise. */
async function countError(promise: Promise<unknown>): Promise<CountError> {
  let caught: unknown;
  await rejects(promise, (error: unknown) => {
    caught = error;
    return error instanceof CountError;
  });
  return caught as CountError;
}

/** Resolves once `server` has received a request: an event, polled. */
async function untilRequested(
  server: { readonly requests: readonly unknown[] },
): Promise<void> {
  while (server.requests.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** `url` with a query parameter added. */
function withQuery(url: string, name: string, value: string): string {
  const withParameter = new URL(url);
  withParameter.searchParams.set(name, value);
  return withParameter.href;
}

/** Another request: the same with one more word in its first string. */
function grow(request: JsonObject): JsonObject {
  const text = JSON.stringify(request);
  return JSON.parse(
    text.replace(CONFORMANCE_MARKER, `${CONFORMANCE_MARKER} again`),
  );
}
