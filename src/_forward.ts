/** Forwarding for the proxy: upstream URLs, hop-by-hop headers, bounded body reads. */

// RFC 9110 section 7.6.1: meaningful for one connection only, never forwarded.
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
];

/** The upstream URL for an incoming URL: the upstream root + the incoming path and query. */
export function upstreamUrl(upstream: URL, incoming: URL): string {
  const base = upstream.pathname.replace(/\/+$/, "");
  return `${upstream.origin}${base}${incoming.pathname}${incoming.search}`;
}

/** Headers to send on: end-to-end headers only, with a recomputed length. */
export function forwardHeaders(
  headers: Headers,
  bodyChanged: boolean,
): Headers {
  const out = withoutHopByHop(headers);
  out.delete("host");
  // The proxy reads bodies as they are; compression stays between proxy and client.
  out.set("accept-encoding", "identity");
  if (bodyChanged) out.delete("content-length");
  return out;
}

/** Response headers to give back: end-to-end headers only. */
export function responseHeaders(headers: Headers): Headers {
  return withoutHopByHop(headers);
}

function withoutHopByHop(headers: Headers): Headers {
  const out = new Headers(headers);
  const named = headers.get("connection")?.split(",") ?? [];
  for (const name of [...HOP_BY_HOP, ...named]) {
    const trimmed = name.trim();
    if (trimmed !== "") out.delete(trimmed);
  }
  return out;
}

/**
 * Reads a body whole, or stops (and cancels the rest) as soon as it passes
 * `limit` bytes: undefined then. A large body is refused without being held.
 */
export async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
