/**
 * The start-up probes of the command line: one count through the configured
 * backend, and one `GET /v1/models` to the upstream. Each says in plain
 * terms what it found; neither throws.
 *
 * @module
 */
import type { Backend } from "../core/backend.ts";
import { ContextLengthMismatchError } from "../core/errors.ts";
import { errorType } from "../core/error_type.ts";

/** How long a probe may take: a start-up check, not a request's count. */
export const PROBE_TIMEOUT_MS = 5000;

/** What one probe count found. */
export type TokenizerProbe =
  /** Counted, and the server's context length (if it reports one) agrees. */
  | { readonly status: "exact"; readonly tokens: number }
  /** Counted, but the backend estimated part of it (no usage anchor yet). */
  | { readonly status: "estimated"; readonly tokens: number }
  /** The server's own context length is another one. */
  | {
    readonly status: "mismatch";
    readonly mismatch: ContextLengthMismatchError;
  }
  /** The count failed: the error's type only, never its text. */
  | { readonly status: "failed"; readonly error: string };

/** The fixed probe conversation: no user content ever goes into a probe. */
const PROBE = {
  messages: [{ role: "user", content: "incontext start-up probe" }],
};

/**
 * Counts the probe conversation once.
 *
 * @param backend The configured backend.
 * @param contextLength The configured context length.
 * @returns What the count found.
 */
export async function probeTokenizer(
  backend: Backend,
  contextLength: number,
): Promise<TokenizerProbe> {
  try {
    const result = await backend.count(structuredClone(PROBE), {
      contextLength,
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    const counted = typeof result === "number"
      ? { tokens: result, estimatedTokens: 0 }
      : result;
    return counted.estimatedTokens > 0
      ? { status: "estimated", tokens: counted.tokens }
      : { status: "exact", tokens: counted.tokens };
  } catch (error) {
    if (error instanceof ContextLengthMismatchError) {
      return { status: "mismatch", mismatch: error };
    }
    return { status: "failed", error: errorType(error) };
  }
}

/** What the upstream probe found. */
export type UpstreamProbe =
  | { readonly reachable: true; readonly status: number }
  | { readonly reachable: false; readonly error: string };

/**
 * Asks the upstream for `GET /v1/models`. Any HTTP answer below 500 (even a
 * 401 for a missing key) means a server is there.
 *
 * @param upstream The upstream root URL.
 * @returns Whether it answered, and how.
 */
export async function probeUpstream(upstream: string): Promise<UpstreamProbe> {
  const root = new URL(upstream);
  const target = `${root.origin}${root.pathname.replace(/\/+$/, "")}/v1/models`;
  try {
    const response = await fetch(target, {
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      redirect: "manual",
    });
    await response.body?.cancel();
    return response.status < 500
      ? { reachable: true, status: response.status }
      : { reachable: false, error: `HTTP ${response.status}` };
  } catch (error) {
    return { reachable: false, error: errorType(error) };
  }
}
