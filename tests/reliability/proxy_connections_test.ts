/**
 * Connection exhaustion: the server runs with an open-file limit of 256 and
 * gets 400 connections that never finish their request head (slowloris).
 * It must stay alive, serve a good client, and close the unfinished
 * connections once the head timeout is over: through the connection cap,
 * and with a cap above the file limit, where accepts fail for want of a
 * descriptor.
 */
import { until } from "../_kit/hang.ts";
import { ok, strictEqual } from "node:assert/strict";
import { spawnProxy } from "./_proxy_spawn.ts";
import { rawResponse, serveRaw } from "./_raw_wire.ts";

const OPEN_FILES = 256;
const SLOW = 400;
/** A guard only: far above what a correct run takes. */
const GUARD_MS = 60_000;

/**
 * Opens `count` connections that each send half a request head, 100 at a
 * time: bursts, so that many wait in the backlog at once.
 */
async function slowloris(port: number, count: number): Promise<Deno.Conn[]> {
  const head = new TextEncoder().encode(
    "GET /v1/models HTTP/1.1\r\nhost: x\r\n",
  );
  const conns: Deno.Conn[] = [];
  for (let opened = 0; opened < count; opened += 100) {
    const burst = await Promise.all(
      Array.from(
        { length: Math.min(100, count - opened) },
        () => Deno.connect({ hostname: "127.0.0.1", port }),
      ),
    );
    conns.push(...burst);
    // A connection the server closed already cannot be written: fine.
    await Promise.all(burst.map((conn) => conn.write(head).catch(() => {})));
  }
  return conns;
}

/** Resolves once the server has closed `conn` (a read sees its end). */
async function closedByServer(conn: Deno.Conn): Promise<void> {
  const buffer = new Uint8Array(1024);
  try {
    while (await conn.read(buffer) !== null) {
      // An answer such as a 408: the close follows.
    }
  } catch {
    // Reset: closed too.
  }
}

/** Retries a request until it is answered; the guard bounds it. */
async function goodClient(url: string): Promise<number> {
  const deadline = Date.now() + GUARD_MS;
  let failure: unknown;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      return response.status;
    } catch (error) {
      failure = error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`never served: ${failure}`);
}

function guard<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what}: timed out`)),
        GUARD_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

for (
  const [name, cap] of [["under the cap", 50], [
    "above the file limit",
    1000,
  ]] as const
) {
  Deno.test(`serve survives ${SLOW} unfinished requests with ${OPEN_FILES} files, ${name}`, async () => {
    await using upstream = serveRaw(() =>
      rawResponse("{}", "application/json")
    );
    await using proxy = await spawnProxy(upstream.url, {
      INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
      INCONTEXT_HEADERS_TIMEOUT_SECONDS: "1",
      INCONTEXT_REQUEST_TIMEOUT_SECONDS: "2",
      INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS: "1",
      INCONTEXT_MAX_CONNECTIONS: String(cap),
    }, { openFiles: OPEN_FILES });
    const conns = await slowloris(proxy.port, SLOW);
    try {
      strictEqual(
        await guard("a good client", goodClient(`${proxy.url}/v1/models`)),
        200,
      );
      await guard(
        "every unfinished connection closed",
        Promise.all(conns.map(closedByServer)),
      );
      strictEqual(
        await guard(
          "a good client after",
          goodClient(`${proxy.url}/v1/models`),
        ),
        200,
      );
      const output = proxy.stdout.text + proxy.stderr.text;
      ok(!/Uncaught|Too many open files/.test(output), output.slice(-2000));
      if (cap > OPEN_FILES) {
        // (256 - 32 reserved - a backlog of 32) / 2; the server writes its
        // log from a buffer, so the warning may come after the answer.
        await until(
          () =>
            /INCONTEXT_MAX_CONNECTIONS lowered from 1000 to 96/.test(
              proxy.stdout.text + proxy.stderr.text,
            ),
          "the lowered cap's warning",
        );
      }
    } finally {
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // Closed already.
        }
      }
    }
  });
}

Deno.test("serve closes a connection whose body stalls, and an idle keep-alive one", async (t) => {
  await using upstream = serveRaw(() => rawResponse("{}", "application/json"));
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${upstream.url}/tokenize`,
    INCONTEXT_HEADERS_TIMEOUT_SECONDS: "1",
    INCONTEXT_REQUEST_TIMEOUT_SECONDS: "2",
    INCONTEXT_KEEPALIVE_TIMEOUT_SECONDS: "1",
  });
  const encoder = new TextEncoder();
  await t.step("a body that stops halfway", async () => {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: proxy.port,
    });
    try {
      await conn.write(encoder.encode(
        "POST /v1/files HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\nhello",
      ));
      await guard("the stalled body's connection closed", closedByServer(conn));
    } finally {
      conn.close();
    }
    // (The start-up probes, /tokenize and /v1/models, reach it; the body's path never does.)
    strictEqual(
      upstream.requests.filter((r) => r.line.includes("/v1/files")).length,
      0,
      "a partial body was forwarded",
    );
  });
  await t.step(
    "a keep-alive connection left idle after its answer",
    async () => {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: proxy.port,
      });
      try {
        await conn.write(encoder.encode(
          "GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n",
        ));
        const buffer = new Uint8Array(4096);
        const n = await conn.read(buffer);
        ok(
          new TextDecoder().decode(buffer.subarray(0, n ?? 0)).startsWith(
            "HTTP/1.1 200",
          ),
        );
        await guard("the idle connection closed", closedByServer(conn));
      } finally {
        conn.close();
      }
    },
  );
});
