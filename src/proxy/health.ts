/**
 * Liveness and readiness. Liveness is only "the process serves"; readiness
 * is "requests would be budgeted and forwarded": the tokenizer counts and the
 * upstream answers.
 */
import { ContextLengthMismatchError } from "../core/errors.ts";
import { upstreamUrl } from "./forward.ts";
import type { ProxyContext } from "./state.ts";
import type { ProxyReporter } from "./options.ts";
import {
  isReady,
  type ReadinessProbe,
  type TokenizerReadiness,
} from "./readiness.ts";

/** `GET /incontext/livez`: the process serves requests. */
export function livez(): Response {
  return Response.json({ status: "ok" });
}

/**
 * `GET /incontext/readyz` (and its alias `/incontext/healthz`): 200 when the
 * tokenizer counts and the upstream answers, 503 otherwise, with what the
 * last probe found and when.
 */
export async function readyz(context: ProxyContext): Promise<Response> {
  const reporters = context.options.reporters ?? [];
  const [probe] = await Promise.all([
    context.readiness.current(() => probeOnce(context)),
    ...reporters.map((reporter) => refreshed(reporter)),
  ]);
  const ready = isReady(probe);
  // What else the proxy leans on (a shared store) is reported, but does not
  // decide readiness: the proxy serves from its own layer meanwhile.
  const detail: Record<string, unknown> = {};
  for (const reporter of reporters) {
    detail[reporter.name] = reporter.status();
  }
  return Response.json({
    status: ready ? "ready" : "not_ready",
    // The handler validated its configuration when it was made; a context
    // length the tokenizer contradicts is the one thing found later.
    configuration: probe.tokenizer === "context_length_mismatch"
      ? "context_length_mismatch"
      : "valid",
    tokenizer: probe.tokenizer,
    upstream: probe.upstream,
    checkedAt: new Date(probe.checkedAt).toISOString(),
    ...detail,
  }, { status: ready ? 200 : 503 });
}

const PROBE_TIMEOUT_MS = 2000;

/** Runs a reporter's refresh, if it has one; its failure is its status's to show. */
async function refreshed(reporter: ProxyReporter): Promise<void> {
  try {
    await reporter.refresh?.();
  } catch {
    // The status it reports next says what is wrong.
  }
}

async function probeOnce(
  context: ProxyContext,
): Promise<Omit<ReadinessProbe, "checkedAt">> {
  const [upstream, tokenizer] = await Promise.all([
    upstreamReachable(context),
    tokenizerReadiness(context),
  ]);
  return { upstream: upstream ? "reachable" : "unreachable", tokenizer };
}

async function upstreamReachable(context: ProxyContext): Promise<boolean> {
  const target = upstreamUrl(
    context.settings.upstream,
    new URL("http://proxy/v1/models"),
  );
  try {
    const response = await (context.options.fetch ?? fetch)(target, {
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      redirect: "manual",
    });
    await response.body?.cancel();
    // Any HTTP answer (even 401 without a key) means the server is there.
    return response.status < 500;
  } catch {
    return false;
  }
}

async function tokenizerReadiness(
  context: ProxyContext,
): Promise<TokenizerReadiness> {
  try {
    // A new text each time: a count the cache answered would not reach the
    // tokenizer, and the probe would report a dead one as reachable.
    const content = `incontext readiness probe ${crypto.randomUUID()}`;
    const result = await context.backend.count(
      { messages: [{ role: "user", content }] },
      {
        contextLength: context.options.contextLength,
        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      },
    );
    return typeof result !== "number" && result.estimatedTokens > 0
      ? "estimating"
      : "reachable";
  } catch (error) {
    return error instanceof ContextLengthMismatchError
      ? "context_length_mismatch"
      : "unreachable";
  }
}
