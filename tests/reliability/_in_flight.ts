/**
 * Requests held in flight while a server is told to stop: an upstream that
 * holds its answer until the test releases it, a raw client whose upload
 * waits for `100 Continue` (the server reading its body) before it sends
 * the body, and the waits a stopping server is judged by.
 */
import { until } from "../_kit/hang.ts";

/** The body the holding upstream answers `/slow` with. */
export const HELD_BODY = "x".repeat(100_000);

/** An upstream that holds `/slow` until released. */
export interface HoldingUpstream extends AsyncDisposable {
  readonly url: string;
  /** Resolves once `/slow` has arrived. */
  readonly arrived: Promise<void>;
  /** Lets `/slow` be answered with {@linkcode HELD_BODY}. */
  release(): void;
}

/** An upstream that holds `/slow` until released; anything else gets `{}`. */
export function serveHolding(): HoldingUpstream {
  const arrived = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      await request.body?.cancel();
      if (new URL(request.url).pathname !== "/slow") {
        return Response.json({});
      }
      arrived.resolve();
      await release.promise;
      return new Response(HELD_BODY);
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    arrived: arrived.promise,
    release: () => release.resolve(),
    async [Symbol.asyncDispose]() {
      release.resolve();
      await server.shutdown();
    },
  };
}

/** Reads until the server closes the connection. */
export async function readToClose(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buffer = new Uint8Array(65536);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // A reset closes it too.
    return text;
  }
}

/** A POST whose head is in and whose body waits: the server is reading it. */
export interface HeldUpload extends Disposable {
  /** Sends the body and reads the answer until the server closes. */
  finish(): Promise<string>;
}

/**
 * Sends the head of a POST of `body` with `Expect: 100-continue` and waits
 * for the `100 Continue`, which the server sends once its handler reads the
 * body: from then on the request is in flight.
 */
export async function holdUpload(
  port: number,
  path: string,
  body: string,
): Promise<HeldUpload> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const bytes = new TextEncoder().encode(body);
  await conn.write(
    new TextEncoder().encode(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${bytes.length}\r\nexpect: 100-continue\r\n\r\n`,
    ),
  );
  let interim = "";
  const buffer = new Uint8Array(1024);
  while (!interim.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    interim += new TextDecoder().decode(buffer.subarray(0, n));
  }
  if (!interim.startsWith("HTTP/1.1 100 ")) {
    conn.close();
    throw new Error(`no 100 Continue: ${JSON.stringify(interim)}`);
  }
  return {
    async finish() {
      await conn.write(bytes);
      return await readToClose(conn);
    },
    [Symbol.dispose]() {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    },
  };
}

/** Waits until a new TCP connection to `port` is refused. */
export async function refusesConnections(port: number): Promise<boolean> {
  await until(async () => {
    try {
      const connection = await Deno.connect({ hostname: "127.0.0.1", port });
      connection.close();
      return false;
    } catch (error) {
      // A connect that lands in the backlog just as the listener closes is
      // reset rather than refused: either way it is never served.
      if (
        error instanceof Deno.errors.ConnectionRefused ||
        error instanceof Deno.errors.ConnectionReset
      ) return true;
      throw error;
    }
  }, "the listener closes");
  return true;
}

/** The body of an HTTP/1.1 response read whole, its chunked framing undone. */
export function bodyOf(response: string): string {
  const split = response.indexOf("\r\n\r\n");
  const head = response.slice(0, split);
  let rest = response.slice(split + 4);
  if (!/\r\ntransfer-encoding: *chunked\r?$/im.test(head)) return rest;
  let body = "";
  for (;;) {
    const line = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, line), 16);
    if (!(size > 0)) return body;
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}
