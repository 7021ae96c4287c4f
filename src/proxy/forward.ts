/** Forwarding for the proxy: upstream URLs and hop-by-hop headers. */

// RFC 9110 section 7.6.1: meaningful for one connection only, never forwarded.
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Header name-value pairs as `Headers` iterates them (lower-case names,
 * repeated values joined, `set-cookie` kept apart): what `fetch` and
 * `Response` take without the cost of another `Headers` object.
 */
export type HeaderPairs = [name: string, value: string][];

/** The upstream URL for an incoming URL: the upstream root + the incoming path and query. */
export function upstreamUrl(upstream: URL, incoming: URL): string {
  const base = upstream.pathname.replace(/\/+$/, "");
  return `${upstream.origin}${base}${incoming.pathname}${incoming.search}`;
}

/** Headers to send on: end-to-end headers only, with a recomputed length. */
export function forwardHeaders(
  headers: Headers,
  bodyChanged: boolean,
): HeaderPairs {
  const out = withoutHopByHop(headers, bodyChanged ? FORWARD_CHANGED : FORWARD);
  // The proxy reads bodies as they are; compression stays between proxy and client.
  out.push(["accept-encoding", "identity"]);
  return out;
}

/** What the proxy drops from a request besides the hop-by-hop headers (fetch sets them anew). */
const FORWARD: ReadonlySet<string> = new Set(["host", "accept-encoding"]);
const FORWARD_CHANGED: ReadonlySet<string> = new Set([
  ...FORWARD,
  "content-length",
]);
const NONE: ReadonlySet<string> = new Set();

/** Response headers to give back: end-to-end headers only. */
export function responseHeaders(headers: Headers): HeaderPairs {
  return withoutHopByHop(headers, NONE);
}

/**
 * The headers without the hop-by-hop ones, those the `Connection` header
 * names, and `drop`. One pass over the headers: copying a `Headers` object
 * and deleting names from it costs several times more. `forEach` visits the
 * pairs the iterator yields (sorted, repeated names joined, `set-cookie`
 * apart: the Fetch standard's one list) without building an iterator
 * result per pair, which is most of the iterator's cost in Deno.
 */
function withoutHopByHop(
  headers: Headers,
  drop: ReadonlySet<string>,
): HeaderPairs {
  const out: HeaderPairs = [];
  let connection: string | undefined;
  headers.forEach((value, name) => {
    if (name === "connection") connection = value;
    if (!HOP_BY_HOP.has(name) && !drop.has(name)) out.push([name, value]);
  });
  if (connection === undefined) return out;
  const named = new Set(
    connection.split(",").map((name) => name.trim().toLowerCase()),
  );
  return out.filter(([name]) => !named.has(name));
}
