/**
 * A fake vLLM `/tokenize` on port 0 that holds every request until released,
 * then answers it normally: counts stay in flight for as long as a test needs.
 */
import {
  createFakeVllmTokenizerHandler,
  type FakeVllmRequest,
  type FakeVllmTokenizerOptions,
} from "../../src/testing/mod.ts";

/** A held tokenizer; dispose it to release what it holds and close it. */
export interface HeldTokenizer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>/tokenize`. */
  readonly url: string;
  /** Every request answered so far (held ones are recorded once released). */
  readonly requests: FakeVllmRequest[];
  /** How many requests have arrived, held or not. */
  readonly arrivals: number;
  /** Resolves once `count` requests have arrived. */
  arrived(count: number): Promise<void>;
  /** Answers every held request, and lets later ones through at once. */
  release(): void;
}

/** Serves a {@linkcode HeldTokenizer}. */
export async function serveHeldTokenizer(
  options: FakeVllmTokenizerOptions = {},
): Promise<HeldTokenizer> {
  const fake = createFakeVllmTokenizerHandler(options);
  let release = (): void => {};
  const released = new Promise<void>((resolve) => release = resolve);
  let arrivals = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  const notify = (): void => {
    for (const waiter of waiting.filter((w) => arrivals >= w.count)) {
      waiting.splice(waiting.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const { promise: listening, resolve: listened } = Promise.withResolvers<
    void
  >();
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen: () => listened(),
  }, async (request) => {
    arrivals++;
    notify();
    await released;
    return fake.handler(request);
  });
  await listening;
  return {
    url: `http://127.0.0.1:${server.addr.port}/tokenize`,
    requests: fake.requests,
    get arrivals() {
      return arrivals;
    },
    arrived(count) {
      const { promise, resolve } = Promise.withResolvers<void>();
      waiting.push({ count, resolve });
      notify();
      return promise;
    },
    release,
    async [Symbol.asyncDispose]() {
      release();
      await server.shutdown();
    },
  };
}
