/**
 * What the protocol fakes share: fault checks, recording requests, holding
 * "slow" answers, broken bodies, and serving a handler on port 0 with a
 * live view of its state.
 *
 * @module
 */

/** One request a fake received. */
export interface FakeServerRequest {
  /** The HTTP method. */
  readonly method: string;
  /** The URL path, such as `/tokenize`. */
  readonly path: string;
  /** The URL query, such as `?tenant=a`, or `""`. */
  readonly search: string;
  /** The headers, with lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body, byte for byte as text. */
  readonly text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly body: unknown;
}

/** Answers one request; `hold` aborts when a held ("slow") answer may end. */
export type FakeRespond = (
  request: Request,
  hold: AbortSignal[],
) => Promise<Response>;

/** Reads and records a request. */
export async function recordRequest(
  request: Request,
  requests: FakeServerRequest[],
): Promise<FakeServerRequest> {
  const recorded = await readRequest(request);
  requests.push(recorded);
  return recorded;
}

/** Reads a request as a fake records it. */
export async function readRequest(
  request: Request,
): Promise<FakeServerRequest> {
  const text = await request.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const { pathname: path, search } = new URL(request.url);
  return {
    method: request.method,
    path,
    search,
    headers: Object.fromEntries(request.headers),
    text,
    body,
  };
}

/** A server's `handler` and a `fetch` that hands requests to it without a network. */
export function handlerAndFetch(
  respond: FakeRespond,
  signal: AbortSignal | undefined,
): {
  handler: (request: Request) => Promise<Response>;
  fetch: typeof globalThis.fetch;
} {
  return {
    // A server's request.signal is left alone: Deno.serve warns about listeners on it.
    handler: (request) =>
      respond(request, signal === undefined ? [] : [signal]),
    fetch: async (input, init) => {
      const request = new Request(input, init);
      request.signal.throwIfAborted();
      const hold = signal === undefined
        ? [request.signal]
        : [request.signal, signal];
      const response = await respond(request, hold);
      // A real fetch rejects once aborted, whatever the server did meanwhile.
      request.signal.throwIfAborted();
      return response;
    },
  };
}

/** Resolves once any of `signals` aborts; never, for none. */
export function released(signals: AbortSignal[]): Promise<void> {
  const any = AbortSignal.any(signals);
  return new Promise((resolve) => {
    if (any.aborted) resolve();
    else any.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** The headers of a JSON answer. */
export const JSON_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
};

/** The first half of a JSON text: it never parses. */
export function firstHalf(json: string): string {
  return json.slice(0, Math.floor(json.length / 2));
}

/**
 * `text` as a chunked body with no length, in 64 KiB parts, then `end`:
 * when it throws, the body errors and the server breaks off the connection.
 */
export function streamed(text: string, end?: () => unknown): Response {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset < bytes.length) {
        controller.enqueue(bytes.subarray(offset, offset += 65_536));
        return;
      }
      await end?.();
      controller.close();
    },
  });
  return new Response(body, { headers: JSON_HEADERS });
}

/** A fake served on `127.0.0.1`: its root URLs, and how to close it. */
export interface ServedFake {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The same on a port nothing listens on, for the "refused" fault. */
  readonly refusedUrl: string;
  /** Releases held answers, then closes the server. */
  close(): Promise<void>;
}

/** Options for {@linkcode serveOnLocalPort}. */
export interface ServeOptions {
  /** Names the fake in errors, such as `"the fake upstream"`. */
  readonly what: string;
  /** Stops the server when aborted, besides `close()`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * What to use where there is no Deno, in the error.
   *
   * @default {"its handler"}
   */
  readonly instead?: string;
}

/**
 * Serves the handler `create` builds (given a signal that aborts on close)
 * on `127.0.0.1`, on a port the system picks. Deno only.
 *
 * @throws {TypeError} If the runtime is not Deno.
 */
export async function serveOnLocalPort(
  create: (signal: AbortSignal) => (request: Request) => Promise<Response>,
  options: ServeOptions,
): Promise<ServedFake> {
  const { what, signal: userSignal, instead = "its handler" } = options;
  if (typeof Deno === "undefined") {
    throw new TypeError(
      `Cannot serve ${what} as the runtime is not Deno: serve ${instead} instead`,
    );
  }
  const closing = new AbortController();
  const signal = userSignal === undefined
    ? closing.signal
    : AbortSignal.any([userSignal, closing.signal]);
  const handler = create(signal);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusedPort = listener.addr.port;
  listener.close();
  let server: Deno.HttpServer<Deno.NetAddr> | undefined;
  await new Promise<void>((resolve) => {
    server = Deno.serve({
      port: 0,
      hostname: "127.0.0.1",
      onListen: () => resolve(),
      // A handler that throws gets a bare 500, without a log line.
      onError: () => new Response(null, { status: 500 }),
    }, handler);
  });
  const running = server as Deno.HttpServer<Deno.NetAddr>;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${running.addr.port}`,
    refusedUrl: `http://127.0.0.1:${refusedPort}`,
    close() {
      // Held requests must end first: shutdown() waits for every response.
      closing.abort();
      closed ??= running.shutdown();
      return closed;
    },
  };
}

/** The faults every protocol fake offers. */
export const COMMON_FAULTS = [
  "none",
  "refused",
  "slow",
  "reset",
  "oversized",
  "truncated-json",
  "non-json",
  "non-object",
  "http-429",
  "http-500",
  "http-503",
] as const;

/** The faults of a fake whose answer is one small JSON count (OpenAI's, SGLang's). */
export const COUNT_FAULTS = [
  "none",
  "refused",
  "slow",
  "http-429",
  "http-500",
  "http-503",
  "non-json",
  "non-object",
  "invalid-count",
] as const;

/** How {@linkcode routedAnswer} breaks an answer. */
export interface RoutedAnswerOptions {
  /** The oversized body, for "oversized". */
  readonly huge: () => string;
  /** The answer under a fault {@linkcode brokenAnswer} does not know, given the parsed valid one. */
  readonly wrong: (fault: string, ok: unknown) => Response;
}

/**
 * A route's valid answer `ok` broken as `fault` says: as it is when it is
 * not a 200 or there is no fault, else by {@linkcode brokenAnswer} (with
 * `options.huge` for "oversized"), else by `options.wrong` given the parsed answer.
 */
export async function routedAnswer(
  fault: string,
  ok: Response,
  options: RoutedAnswerOptions,
): Promise<Response> {
  const { huge, wrong } = options;
  if (ok.status !== 200 || fault === "none") return ok;
  const text = await ok.text();
  return brokenAnswer(fault, text, huge) ?? wrong(fault, JSON.parse(text));
}

/**
 * The answer under a fault that breaks the transport or the body, or
 * `undefined` for the others. `ok` is the valid answer's JSON; `huge`
 * builds an oversized valid answer.
 */
export function brokenAnswer(
  fault: string,
  ok: string,
  huge: () => string,
): Response | undefined {
  switch (fault) {
    case "truncated-json":
      return new Response(firstHalf(ok), { headers: JSON_HEADERS });
    case "reset":
      return streamed(firstHalf(ok), () => {
        throw new Error("The fake server reset the connection");
      });
    case "oversized":
      return streamed(huge());
    case "non-object":
      return Response.json([JSON.parse(ok)]);
    default:
      return undefined;
  }
}

/** An HTML answer with status 200, as a proxy in front of a server sends. */
export function htmlAnswer(html: string): Response {
  return new Response(html, { headers: { "content-type": "text/html" } });
}

/**
 * `value` if it is one of `faults`, else a RangeError naming `faultName`
 * (such as "the fake vLLM fault") and listing them.
 */
export function checkFault<F extends string>(
  value: F,
  faults: readonly F[],
  faultName: string,
): F {
  if (!faults.includes(value)) {
    throw new RangeError(
      `Cannot set ${faultName} as it must be one of ${faults.join(", ")}`,
    );
  }
  return value;
}

/**
 * `value` if it is a positive safe integer, else a RangeError saying that
 * `name` of `what` (such as "the fake TGI server") must be one.
 */
export function positiveInteger(
  what: string,
  name: string,
  value: number,
): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `Cannot create ${what} as '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}

/** What names a fake in its messages, and the faults it knows. */
export interface FakeIdentity<F extends string> {
  /** The fake, such as "the fake OpenAI API". */
  readonly what: string;
  /** Its fault, such as "the fake OpenAI fault". */
  readonly faultName: string;
  /** Every fault it knows, `"none"`, `"refused"` and `"slow"` among them. */
  readonly faults: readonly F[];
  /** What to serve instead off Deno, such as "createFakeOpenAIHandler()". */
  readonly instead: string;
  /** A path every served URL ends with, such as `"/tokenize"`. */
  readonly path?: string;
}

/** The options every fake takes. */
export interface FakeBaseOptions<F extends string> {
  /** The first fault; `"none"` when undefined. */
  readonly fault?: F;
  /** Releases held (`"slow"`) requests once aborted. */
  readonly signal?: AbortSignal;
}

/** How one fake answers, past the faults {@linkcode createFakeCore} applies. */
export interface FakeAnswers<F extends string> {
  /** An answer that comes before any fault but `"refused"`, such as a key check. */
  readonly gate?: (received: FakeServerRequest) => Response | undefined;
  /** The answer a `"slow"` request gets once released. */
  readonly slow: () => Response;
  /**
   * Answers a recorded request under `fault`, which is `"none"` off
   * `faultPath` and never `"refused"` or `"slow"`.
   */
  readonly respond: (
    received: FakeServerRequest,
    exchange: FakeExchange<F>,
  ) => Response | Promise<Response>;
}

/** What {@linkcode FakeAnswers.respond} answers besides the recorded request. */
export interface FakeExchange<F extends string> {
  /** The request itself. */
  readonly request: Request;
  /** The fault in force for it. */
  readonly fault: F;
  /** The signals that release a held answer. */
  readonly hold: AbortSignal[];
}

/** The state and entry points every fake has; pick the public part with {@linkcode liveView}. */
export interface FakeCore<F extends string> {
  /** Answers one request, or fails as `fault` says. */
  readonly handler: (request: Request) => Promise<Response>;
  /** A `fetch` that hands every request to `handler`. */
  readonly fetch: typeof globalThis.fetch;
  /** Every request received, oldest first. */
  readonly requests: FakeServerRequest[];
  /** The current fault, checked when set. */
  fault: F;
  /** When set, the fault (but `"refused"`) applies only to this path. */
  faultPath: string | undefined;
}

/** The public face of a fake's handler: {@linkcode FakeCore} without `faultPath`. */
export const HANDLER_KEYS = ["handler", "fetch", "requests", "fault"] as const;

/**
 * A fake's handler, `fetch`, recorded requests and fault: `"refused"`
 * rejects before reading the request, every other request is recorded,
 * `"slow"` holds it until released, and `answers.respond` answers the rest.
 *
 * @throws {RangeError} If `options.fault` is not one of `identity.faults`.
 */
export function createFakeCore<F extends string>(
  identity: FakeIdentity<F>,
  options: FakeBaseOptions<F>,
  answers: FakeAnswers<F>,
): FakeCore<F> {
  const { what, faults, faultName } = identity;
  const check = (value: F) => checkFault(value, faults, faultName);
  let fault = check(options.fault ?? ("none" as F));

  async function respond(
    request: Request,
    hold: AbortSignal[],
  ): Promise<Response> {
    if (fault === "refused") {
      throw new TypeError(`Connection refused by ${what}`);
    }
    const received = await recordRequest(request, core.requests);
    const gated = answers.gate?.(received);
    if (gated !== undefined) return gated;
    const { faultPath } = core;
    const active = faultPath === undefined || faultPath === received.path
      ? fault
      : ("none" as F);
    if (active === "slow") {
      await released(hold);
      return answers.slow();
    }
    return await answers.respond(received, { request, fault: active, hold });
  }

  const core: FakeCore<F> = {
    ...handlerAndFetch(respond, options.signal),
    requests: [],
    faultPath: undefined,
    get fault(): F {
      return fault;
    },
    set fault(value: F) {
      fault = check(value);
    },
  };
  return core;
}

/**
 * An object whose `keys` read and write those of `source`, live: the
 * public face of a fake, without the state it does not offer.
 */
export function liveView<S extends object, K extends keyof S>(
  source: S,
  keys: readonly K[],
): Pick<S, K> {
  const view = {} as Pick<S, K>;
  for (const key of keys) {
    Object.defineProperty(view, key, {
      enumerable: true,
      get: () => source[key],
      set: (value: S[K]) => {
        source[key] = value;
      },
    });
  }
  return view;
}

/** A served fake's common face: its URL (a closed port under `"refused"`), close, disposal. */
export interface ServedFakeView extends AsyncDisposable {
  /** The fake's URL; under the `"refused"` fault, a port nothing listens on. */
  readonly url: string;
  /** Closes the server (as disposing does). */
  close(): Promise<void>;
}

/** How {@linkcode serveFake} builds and shows one fake. */
export interface FakeSetup<O, C, K extends keyof C> {
  readonly identity: FakeIdentity<string>;
  /** Builds the fake from the options, with the server's signal. */
  readonly create: (options: O) => C;
  /** The fake's live properties the served view shows. */
  readonly keys: readonly K[];
  /**
   * Whether the view has `close()`.
   *
   * @default {true}
   */
  readonly withClose?: boolean;
}

/**
 * Serves the fake `create` builds from `options` (with a signal that also
 * aborts on close) on `127.0.0.1` port 0, and returns its live view: `url`,
 * `keys`, `close()` when `withClose`, and disposal.
 *
 * @throws {TypeError} If the runtime is not Deno.
 */
export async function serveFake<
  O extends { readonly signal?: AbortSignal },
  C extends {
    readonly handler: (request: Request) => Promise<Response>;
    readonly fault: string;
  },
  K extends keyof C,
>(
  options: O,
  setup: FakeSetup<O, C, K>,
): Promise<ServedFakeView & Pick<C, K>> {
  const { identity, create, keys, withClose = true } = setup;
  let fake: C | undefined;
  const served = await serveOnLocalPort((signal) => {
    fake = create({ ...options, signal });
    return fake.handler;
  }, {
    what: identity.what,
    signal: options.signal,
    instead: identity.instead,
  });
  const created = fake as C;
  const path = identity.path ?? "";
  const view = liveView(created, keys) as ServedFakeView & Pick<C, K>;
  Object.defineProperty(view, "url", {
    enumerable: true,
    get: () =>
      `${created.fault === "refused" ? served.refusedUrl : served.url}${path}`,
  });
  const close = () => served.close();
  const methods: Partial<ServedFakeView> = withClose ? { close } : {};
  return Object.assign(view, methods, { [Symbol.asyncDispose]: close });
}
