/**
 * HTTP/1.1 on raw sockets, for probes that must see or send exactly what is
 * on the wire: an upstream recording each request's head and body as they
 * arrived (framing included), and a client writing requests that `fetch`
 * would refuse or rewrite.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One request as the raw upstream read it. */
export interface RawRequest {
  /** The request line, such as `OPTIONS /v1/x HTTP/1.1`. */
  readonly line: string;
  /** Header names (lower-case) and values, in order. */
  readonly headers: [string, string][];
  /** The body bytes as framed on the wire (chunk sizes included), as text. */
  readonly body: string;
}

/** What the raw upstream answers: a whole response's bytes, or bytes and then a cut. */
export type RawAnswer = (request: RawRequest) => string;

/** A raw HTTP/1.1 upstream on port 0: one request per connection. */
export interface RawUpstream extends AsyncDisposable {
  readonly url: string;
  readonly requests: RawRequest[];
}

/** Reads from `conn` until `done(text)` holds or the peer closes. */
async function readUntil(
  conn: Deno.Conn,
  start: string,
  done: (text: string) => boolean,
): Promise<string> {
  let text = start;
  const buffer = new Uint8Array(65536);
  while (!done(text)) {
    const n = await conn.read(buffer);
    if (n === null) break;
    text += decoder.decode(buffer.subarray(0, n));
  }
  return text;
}

/** Reads one request: its head, then a body framed by length, by chunks, or none. */
async function readRequest(conn: Deno.Conn): Promise<RawRequest> {
  const raw = await readUntil(conn, "", (text) => text.includes("\r\n\r\n"));
  const end = raw.indexOf("\r\n\r\n");
  const [line = "", ...rest] = raw.slice(0, end).split("\r\n");
  const headers = rest.map((h): [string, string] => {
    const colon = h.indexOf(":");
    return [h.slice(0, colon).toLowerCase(), h.slice(colon + 1).trim()];
  });
  const value = (name: string) => headers.find(([n]) => n === name)?.[1];
  const length = value("content-length");
  const chunked = value("transfer-encoding")?.includes("chunked");
  const head = raw.slice(end + 4);
  const body = length !== undefined
    ? await readUntil(conn, head, (t) => t.length >= Number(length))
    : chunked
    ? await readUntil(conn, head, (t) => t.endsWith("0\r\n\r\n"))
    : head;
  return { line, headers, body };
}

/** Serves `answer` to every request, recording each request first. */
export function serveRaw(answer: RawAnswer): RawUpstream {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const requests: RawRequest[] = [];
  const open = new Set<Deno.Conn>();
  const serving = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      (async () => {
        try {
          const request = await readRequest(conn);
          requests.push(request);
          await conn.write(encoder.encode(answer(request)));
        } catch {
          // The proxy went away first: nothing to answer.
        } finally {
          open.delete(conn);
          conn.close();
        }
      })();
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    requests,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of open) conn.close();
      await serving.catch(() => {});
    },
  };
}

/** A whole response: `body` with its length, closing the connection. */
export function rawResponse(
  body: string,
  type = "text/plain",
  status = "200 OK",
): string {
  return `HTTP/1.1 ${status}\r\ncontent-type: ${type}\r\ncontent-length: ${
    encoder.encode(body).length
  }\r\nconnection: close\r\n\r\n${body}`;
}

/** Writes `request` raw to `port` and returns the response up to the peer's close. */
export async function rawExchange(
  port: number,
  request: string,
): Promise<{ status: number; text: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(encoder.encode(request));
    const text = await readUntil(conn, "", (t) => {
      const end = t.indexOf("\r\n\r\n");
      if (end < 0) return false;
      const length = /\r\ncontent-length: *(\d+)/i.exec(t.slice(0, end));
      return length !== null && t.length - end - 4 >= Number(length[1]);
    });
    return { status: Number(text.slice(9, 12)), text };
  } finally {
    conn.close();
  }
}
