/**
 * The load test's parts: a fake upstream that times its own work per
 * request, the body each client sends, what the fake would have answered
 * without the proxy, and the client that reads (or slowly reads) a stream.
 */
import {
  createFakeUpstreamHandler,
  type FakeUpstreamFaultMix,
  type FakeUpstreamHandler,
} from "../../src/testing/mod.ts";

/** The header each load request carries, echoed to the upstream by the proxy. */
export const LOAD_ID = "x-load-id";

/** The reply the fake writes: the request's own marker, then a few words to stream. */
export function echoReply(body: { readonly [key: string]: unknown }): string {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.at(-1) as { content?: unknown } | undefined;
  const content = typeof last?.content === "string" ? last.content : "";
  const words = content.startsWith("slow ")
    ? "and a long tail to read slowly ".repeat(15)
    : "the quick brown fox jumps over the lazy dog";
  return `Echo ${content}: ${words}`;
}

/** A chat request unique to `id`; slow ones get a long reply. */
export function loadBody(id: string, slow = false): Record<string, unknown> {
  return {
    model: "m",
    max_tokens: 65536,
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "You are a load test." },
      { role: "user", content: `${slow ? "slow " : ""}marker ${id}` },
    ],
  };
}

/** The upstream's own time for one request: handler entry to the body's end. */
export interface UpstreamTiming {
  readonly start: number;
  end?: number;
}

/** A fake upstream on port 0 that times each generation by its load id. */
export interface TimedUpstream extends AsyncDisposable {
  readonly url: string;
  readonly fake: FakeUpstreamHandler;
  readonly timings: Map<string, UpstreamTiming>;
}

/** Serves the fake with `fault`, timing each request that carries a load id. */
/**
 * The load tests' and benchmark's faulty upstream: 10% of answers delayed by
 * 50-500 ms, 5% cut mid-stream, 5% answered with 5xx, seeded.
 */
export const SEEDED_FAULTS: FakeUpstreamFaultMix = {
  seed: 7,
  delayFraction: 0.10,
  delayMs: [50, 500],
  cutFraction: 0.05,
  errorFraction: 0.05,
};

export function serveTimedUpstream(
  fault: FakeUpstreamFaultMix | "none",
  chunkDelayMs = 0,
): TimedUpstream {
  const closing = new AbortController();
  const fake = createFakeUpstreamHandler({
    maxModelLen: 65536,
    reply: echoReply,
    fault,
    chunkDelayMs,
    signal: closing.signal,
  });
  const timings = new Map<string, UpstreamTiming>();
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen() {},
    // A cut body errors on purpose; no log line for it.
    onError: () => new Response(null, { status: 500 }),
  }, async (request) => {
    const id = request.headers.get(LOAD_ID);
    if (id === null || request.url.endsWith("/tokenize")) {
      return await fake.handler(request);
    }
    const timing: UpstreamTiming = { start: performance.now() };
    timings.set(id, timing);
    const response = await fake.handler(request);
    if (response.body === null) {
      timing.end = performance.now();
      return response;
    }
    const end = () => {
      timing.end ??= performance.now();
    };
    const body = response.body.pipeThrough(
      new TransformStream({ flush: end }),
    );
    return new Response(body, response);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    fake,
    timings,
    async [Symbol.asyncDispose]() {
      closing.abort();
      await server.shutdown();
    },
  };
}

/** How one client request ended. */
export interface Outcome {
  readonly id: string;
  readonly status: number;
  readonly text: string;
  /** The error that ended the read, by kind: fetch, read or timeout. */
  readonly failed?: "fetch" | "read" | "timeout";
  readonly start: number;
  readonly end: number;
  readonly headers?: Headers;
}

const decoder = new TextDecoder();

/**
 * Posts `body` and reads the whole answer, pausing `pauseMs` between reads
 * for a slow client; gives up (aborting) after `timeoutMs`.
 */
export async function request(
  url: string,
  id: string,
  body: unknown,
  options: { pauseMs?: number; timeoutMs: number },
): Promise<Outcome> {
  const start = performance.now();
  const signal = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", [LOAD_ID]: id },
      body: JSON.stringify(body),
      signal,
    });
  } catch {
    return {
      id,
      status: 0,
      text: "",
      failed: signal.aborted ? "timeout" : "fetch",
      start,
      end: performance.now(),
    };
  }
  let text = "";
  let failed: Outcome["failed"];
  try {
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk, { stream: true });
      if (options.pauseMs) {
        await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
    }
  } catch {
    failed = signal.aborted ? "timeout" : "read";
  }
  return {
    id,
    status: response.status,
    text,
    start,
    end: performance.now(),
    headers: response.headers,
    ...(failed ? { failed } : {}),
  };
}

/** The fake's serial ids and clock differ run to run; nothing else does. */
export function normalise(text: string): string {
  return text
    .replace(/chatcmpl-fake-\d+/g, "chatcmpl-fake-N")
    .replace(/"created":\d+/g, '"created":0');
}

/** The `q` quantile (0..1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.max(0, rank)]!;
}
