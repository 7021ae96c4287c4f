/**
 * The shutdown grace is a deadline for streams that flow: five streamed chat
 * completions the upstream never ends, sent faster than their clients read,
 * are ended when the grace is over. Each client's stream errors, each
 * upstream stream is let go, and the server exits with 0.
 */
import { ok, strictEqual } from "node:assert/strict";
import { spawnProxy } from "./_proxy_spawn.ts";

const STREAMS = 5;
/** Guards only: each is far above what a correct run takes. */
const GUARD_MS = 30_000;

/** An upstream whose every answer is an endless SSE stream, one event per tick. */
function serveEndless(): {
  url: string;
  started: number;
  cancelled: number;
  allStarted: Promise<void>;
  allCancelled: Promise<void>;
} & AsyncDisposable {
  const started = Promise.withResolvers<void>();
  const cancelled = Promise.withResolvers<void>();
  const state = { started: 0, cancelled: 0 };
  const timers = new Set<ReturnType<typeof setInterval>>();
  const event = new TextEncoder().encode('data: {"choices":[]}\n\n');
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      await request.body?.cancel();
      if (++state.started === STREAMS) started.resolve();
      let timer: ReturnType<typeof setInterval> | undefined;
      let ended = false;
      // Once the proxy lets go (a cancel, or a write to a closed connection):
      // the stream is over on the upstream's side.
      const end = () => {
        if (ended) return;
        ended = true;
        clearInterval(timer);
        if (timer !== undefined) timers.delete(timer);
        if (++state.cancelled === STREAMS) cancelled.resolve();
      };
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          timer = setInterval(() => {
            try {
              // Faster than a client reads: the proxy always has bytes to pass.
              for (let i = 0; i < 50; i++) controller.enqueue(event);
            } catch {
              end();
            }
          }, 5);
          timers.add(timer);
        },
        cancel: end,
      });
      return new Response(body, {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    get started() {
      return state.started;
    },
    get cancelled() {
      return state.cancelled;
    },
    allStarted: started.promise,
    allCancelled: cancelled.promise,
    async [Symbol.asyncDispose]() {
      for (const timer of timers) clearInterval(timer);
      await server.shutdown();
    },
  };
}

/** Reads a stream to its end; resolves with how it ended and how many bytes came. */
async function drain(
  response: Response,
): Promise<{ error: boolean; bytes: number }> {
  let bytes = 0;
  try {
    for await (const chunk of response.body!) bytes += chunk.byteLength;
    return { error: false, bytes };
  } catch {
    return { error: true, bytes };
  }
}

function guard<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what}: not within ${GUARD_MS} ms`)),
        GUARD_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

Deno.test("serve ends streams that still flow when the shutdown grace is over", async () => {
  await using upstream = serveEndless();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
    INCONTEXT_SHUTDOWN_GRACE_SECONDS: "1",
  });
  const responses = await Promise.all(
    Array.from(
      { length: STREAMS },
      () =>
        fetch(`${proxy.url}/v1/models`, {
          headers: { accept: "text/event-stream" },
        }),
    ),
  );
  for (const response of responses) strictEqual(response.status, 200);
  const reads = responses.map(drain);
  await guard("all streams reached the upstream", upstream.allStarted);
  proxy.child.kill("SIGTERM");
  const ends = await guard("every client stream ended", Promise.all(reads));
  for (const end of ends) {
    ok(end.error, "a cut stream ended as if complete");
    ok(end.bytes > 0);
  }
  await guard("every upstream stream was cancelled", upstream.allCancelled);
  const status = await guard("the server exited", proxy.child.status);
  strictEqual(status.code, 0, proxy.stderr.text);
  ok(/grace period of 1 s over/.test(proxy.stdout.text + proxy.stderr.text));
});
