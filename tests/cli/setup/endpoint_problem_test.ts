import { strictEqual } from "node:assert/strict";
import {
  publicUrl,
  transportProblem,
} from "../../../src/cli/setup/endpoint_problem.ts";

/** A fetch failure as Deno reports it: a TypeError caused by the client's error. */
function denoFailure(detail: string, url = "http://h.test:1/tokenize") {
  return new TypeError("fetch failed", {
    cause: new Error(
      `error sending request for url (${url}): client error (Connect): ${detail}`,
    ),
  });
}

/** A fetch failure as Node's undici reports it: a cause with a code. */
function nodeFailure(code: string) {
  const cause = Object.assign(new Error(`connect ${code} 10.0.0.1:80`), {
    code,
  });
  return new TypeError("fetch failed", { cause });
}

Deno.test("transportProblem() tells refused, DNS, TLS, unreachable and reset apart, on Deno and Node", () => {
  const cases: [unknown, string][] = [
    [
      denoFailure("tcp connect error: Connection refused (os error 111)"),
      "connection refused (nothing listens on that port)",
    ],
    [
      nodeFailure("ECONNREFUSED"),
      "connection refused (nothing listens on that port)",
    ],
    [
      denoFailure(
        "dns error: failed to lookup address information: Name or service not known",
      ),
      "no such host (the DNS lookup failed)",
    ],
    [nodeFailure("ENOTFOUND"), "no such host (the DNS lookup failed)"],
    [
      denoFailure("invalid peer certificate: UnknownIssuer"),
      "TLS failed (the certificate is not trusted, or the server does not speak https there)",
    ],
    [
      nodeFailure("DEPTH_ZERO_SELF_SIGNED_CERT"),
      "TLS failed (the certificate is not trusted, or the server does not speak https there)",
    ],
    [
      denoFailure("tcp connect error: No route to host (os error 113)"),
      "the host is unreachable (no route to it)",
    ],
    [nodeFailure("ECONNRESET"), "the connection was reset before an answer"],
    [
      new DOMException(
        "The operation was aborted due to timeout",
        "TimeoutError",
      ),
      "no answer within 5 s (timeout)",
    ],
    [new RangeError("odd"), "the request failed (RangeError)"],
  ];
  for (const [error, expected] of cases) {
    strictEqual(transportProblem(error, 5), expected);
  }
});

Deno.test("transportProblem() reads the error, not the URL it quotes", () => {
  const reset = denoFailure(
    "connection closed before message completed",
    "https://tls.certificate.test/ssl/tokenize",
  );
  strictEqual(
    transportProblem(reset, 5),
    "the connection was reset before an answer",
  );
});

Deno.test("publicUrl() keeps the path, never credentials, query or fragment", () => {
  strictEqual(
    publicUrl(
      "https://user:sk-secret@gw.test:8443/vllm/v1/tokenize?key=sk-2#x",
    ),
    "https://gw.test:8443/vllm/v1/tokenize",
  );
  strictEqual(publicUrl("http://127.0.0.1:8000/"), "http://127.0.0.1:8000");
  strictEqual(publicUrl("not a url"), "(invalid URL)");
});
