/**
 * What went wrong with an endpoint, in words that say which part is wrong:
 * the URL as the user wrote it (without credentials or query), and what
 * happened there: the connection refused, no such host, TLS, no answer in
 * time, an HTTP status, or an answer in another shape. Error messages are
 * read to tell these apart, never printed: they can quote a URL's secrets.
 *
 * @module
 */

/**
 * The URL with its scheme, host, port and path: never its credentials,
 * query or fragment, where keys travel.
 *
 * @param url An absolute URL.
 * @returns Such as `http://127.0.0.1:8000/v1/tokenize`, or `(invalid URL)`.
 */
export function publicUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname === "/" ? "" : parsed.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** Error codes (Node's, undici's) and message fragments (Deno's) of each failure. */
const TRANSPORT: readonly {
  readonly problem: string;
  readonly codes: readonly string[];
  readonly text: RegExp;
}[] = [
  {
    problem: "connection refused (nothing listens on that port)",
    codes: ["ECONNREFUSED"],
    text: /connection refused|os error 111\b/i,
  },
  {
    problem: "no such host (the DNS lookup failed)",
    codes: ["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME"],
    text:
      /dns error|failed to lookup address|name or service not known|nodename nor servname|no such host/i,
  },
  {
    problem:
      "TLS failed (the certificate is not trusted, or the server does not speak https there)",
    codes: [
      "CERT_HAS_EXPIRED",
      "DEPTH_ZERO_SELF_SIGNED_CERT",
      "SELF_SIGNED_CERT_IN_CHAIN",
      "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      "ERR_TLS_CERT_ALTNAME_INVALID",
      "ERR_SSL_WRONG_VERSION_NUMBER",
    ],
    text:
      /certificate|\btls\b|\bssl\b|handshake|corrupt message|wrong version number/i,
  },
  {
    problem: "the host is unreachable (no route to it)",
    codes: ["EHOSTUNREACH", "ENETUNREACH"],
    text: /no route to host|network is unreachable|host is unreachable/i,
  },
  {
    problem: "the connection was reset before an answer",
    codes: ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"],
    text: /connection reset|broken pipe|connection closed before/i,
  },
  {
    problem: "the runtime refuses that port",
    codes: [],
    text: /port \d+ (?:are|is) blocked/i,
  },
];

/**
 * Why a request got no HTTP answer, from its error and the errors that
 * caused it.
 *
 * @param error What `fetch` threw.
 * @param timeoutSeconds The request's deadline, named when it passed.
 * @returns Such as `connection refused (nothing listens on that port)`.
 */
export function transportProblem(
  error: unknown,
  timeoutSeconds: number,
): string {
  const chain: unknown[] = [];
  for (
    let at: unknown = error;
    at !== undefined && at !== null && chain.length < 8;
    at = (at as { cause?: unknown }).cause
  ) {
    chain.push(at);
  }
  if (
    chain.some((e) =>
      e instanceof Error &&
      (e.name === "TimeoutError" || e.name === "AbortError")
    )
  ) {
    return `no answer within ${timeoutSeconds} s (timeout)`;
  }
  for (const { problem, codes, text } of TRANSPORT) {
    const matches = chain.some((e) => {
      const code = (e as { code?: unknown }).code;
      // The URL a message quotes is left out: a host may be named "tls".
      const message = e instanceof Error
        ? e.message.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s)]*/gi, "")
        : "";
      return (typeof code === "string" && codes.includes(code)) ||
        text.test(message);
    });
    if (matches) return problem;
  }
  const first = chain[0];
  return `the request failed (${
    first instanceof Error ? first.name : typeof first
  })`;
}
