/**
 * Canary secrets, and an upstream on port 0 (the fake vLLM server) that can
 * be switched to fail the way that exposes them: error bodies that echo the
 * request (generation or /tokenize), or a held request.
 */
import { createFakeUpstreamHandler } from "../../src/testing/mod.ts";

/** Strings that must never leave the places they belong in. */
export const CANARY = {
  prompt: "CANARY-PROMPT-7f3a1c",
  tool: "CANARY-TOOL-ARGUMENT-91bc2d",
  clientKey: "sk-CANARY-CLIENT-KEY-5d2e8f",
  tokenizerKey: "sk-CANARY-TOKENIZER-KEY-4c1d0a",
  urlToken: "CANARY-URL-TOKEN-8e6f3b",
} as const;

/** Every canary, for the leak checks. */
export const CANARIES: readonly string[] = Object.values(CANARY);

/** The canaries found in `text`. */
export function leaked(text: string): string[] {
  return CANARIES.filter((canary) => text.includes(canary));
}

/**
 * How the upstream behaves: normally; echoing every generation request in a
 * 500; echoing every /tokenize request in a 503 (a server error, so the count
 * falls back to the estimate; a 400 would be a refusal, left unchanged);
 * echoing every /tokenize request in a 400 (vLLM's refusal of a request);
 * holding generation requests.
 */
export type Mode =
  | "normal"
  | "echo-errors"
  | "echo-tokenize-errors"
  | "echo-tokenize-refusals"
  | "stall";

/** One request the upstream received. */
export interface Seen {
  readonly path: string;
  readonly search: string;
  readonly authorization: string | null;
}

/** The switchable upstream; dispose it to release held requests and close it. */
export interface SecretUpstream extends AsyncDisposable {
  readonly url: string;
  /** The tokenizer URL, with a canary in its query string. */
  readonly tokenizerUrl: string;
  readonly seen: Seen[];
  mode: Mode;
}

/** Serves the switchable upstream. */
export function serveSecretUpstream(): SecretUpstream {
  const closing = new AbortController();
  const fake = createFakeUpstreamHandler({
    maxModelLen: 65536,
    signal: closing.signal,
  });
  const seen: Seen[] = [];
  let mode: Mode = "normal";
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen() {},
  }, async (request) => {
    const { pathname: path, search } = new URL(request.url);
    seen.push({
      path,
      search,
      authorization: request.headers.get("authorization"),
    });
    const tokenize = path === "/tokenize";
    if (
      (mode === "echo-errors" && !tokenize && request.method === "POST") ||
      (mode.startsWith("echo-tokenize-") && tokenize)
    ) {
      // What careless servers do: quote the request back in the error.
      const body = await request.text();
      return Response.json({
        error: { message: `Bad request: ${body}`, type: "BadRequestError" },
      }, {
        status: !tokenize ? 500 : mode === "echo-tokenize-refusals" ? 400 : 503,
      });
    }
    if (mode === "stall" && !tokenize && request.method === "POST") {
      await new Promise<void>((resolve) =>
        closing.signal.addEventListener("abort", () => resolve(), {
          once: true,
        })
      );
      return new Response(null, { status: 503 });
    }
    return await fake.handler(request);
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    tokenizerUrl: `${url}/tokenize?token=${CANARY.urlToken}`,
    seen,
    get mode() {
      return mode;
    },
    set mode(value: Mode) {
      mode = value;
    },
    async [Symbol.asyncDispose]() {
      closing.abort();
      await server.shutdown();
    },
  };
}
