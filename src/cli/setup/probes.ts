/**
 * The start-up probes of the command line: one count through the configured
 * backend, and one `GET /v1/models` to the upstream. Each says in plain
 * terms what it found, naming the URL (never its credentials or query) and
 * what happened there; neither throws.
 *
 * @module
 */
import type { Backend } from "../../core/backend.ts";
import { ContextLengthMismatchError, CountError } from "../../core/errors.ts";
import { errorType } from "../../core/error_type.ts";
import { readLimited } from "../../_internal/limited_read.ts";
import { publicUrl, transportProblem } from "./endpoint_problem.ts";

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
  /** The count failed: where and what happened, and the error's type. */
  | {
    readonly status: "failed";
    readonly error: string;
    /** Such as `http://127.0.0.1:8000/v1/tokenize answered HTTP 404 (...)`. */
    readonly problem: string;
  };

/** Where the probe counts: the configured backend's name and URL. */
export interface TokenizerTarget {
  /** The backend's name, such as `"vllm"`. */
  readonly backend: string;
  /** The configured count URL, if any (`vllm`: the `/tokenize` URL; others: the base URL). */
  readonly url: string | undefined;
}

/** The fixed probe conversation: no user content ever goes into a probe. */
const PROBE = {
  messages: [{ role: "user", content: "incontext start-up probe" }],
};

/**
 * Counts the probe conversation once.
 *
 * @param backend The configured backend.
 * @param contextLength The configured context length.
 * @param target The backend's name and URL, to say where a failure is.
 * @returns What the count found.
 */
export async function probeTokenizer(
  backend: Backend,
  contextLength: number,
  target: TokenizerTarget,
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
    return {
      status: "failed",
      error: errorType(error),
      problem: await countProblem(error, target, backend.source),
    };
  }
}

const TIMEOUT_SECONDS = PROBE_TIMEOUT_MS / 1000;

/**
 * What a failed probe count means, from the backend's CountError (whose
 * message names the endpoint and what failed, never a URL or the prompt)
 * and, when no HTTP answer came, a second request that tells why.
 */
async function countProblem(
  error: unknown,
  target: TokenizerTarget,
  source: string,
): Promise<string> {
  const where = target.url === undefined ? source : publicUrl(target.url);
  const message = error instanceof CountError ? error.message : "";
  const status = /answered HTTP (\d{3})$/.exec(message)?.[1];
  if (status !== undefined) {
    return `${where} answered HTTP ${status}${
      tokenizerHint(Number(status), target)
    }`;
  }
  const redirect = /answered a redirect \(HTTP (\d{3})\)/.exec(message)?.[1];
  if (redirect !== undefined) {
    return `${where} answered a redirect (HTTP ${redirect}), which a count never follows: give the URL it leads to`;
  }
  const shape = /(returned an? [^:]*|answered more than \d+ bytes)$/.exec(
    message,
  )?.[1];
  if (shape !== undefined) {
    return `${where} answered, but not as ${
      target.backend === "vllm" ? "vLLM's /tokenize" : `a ${source} server`
    } does (it ${shape})`;
  }
  if (/count was aborted$|did not answer within/.test(message)) {
    return `${where}: no answer within ${TIMEOUT_SECONDS} s (timeout)`;
  }
  if (target.url !== undefined && /request failed: \w+$/.test(message)) {
    return `${where}: ${await whyNoAnswer(target.url)}`;
  }
  return message === ""
    ? `${where}: the count failed (${errorType(error)})`
    : `${where}: ${message}`;
}

/** Sends the probe once more, to tell why no HTTP answer came. */
async function whyNoAnswer(url: string): Promise<string> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(PROBE),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      redirect: "manual",
    });
    await response.body?.cancel();
    return `the count failed, though a second request was answered HTTP ${response.status}`;
  } catch (error) {
    return transportProblem(error, TIMEOUT_SECONDS);
  }
}

/** What to do about an HTTP status of the count endpoint. */
function tokenizerHint(status: number, target: TokenizerTarget): string {
  if (status === 401 || status === 403) {
    return " (it needs a key: set INCONTEXT_TOKENIZER_API_KEY)";
  }
  if (status !== 404 && status !== 405) return "";
  if (target.backend !== "vllm" || target.url === undefined) {
    return " (give the server's base URL, without an endpoint path)";
  }
  const url = new URL(target.url);
  const path = url.pathname.replace(/\/+$/, "");
  const base = path.endsWith("/tokenize") ? path.slice(0, -9) : path;
  const root = base.replace(/\/v1$/, "");
  const suggested = `${url.origin}${root}/tokenize`;
  return suggested === publicUrl(target.url)
    ? " (no /tokenize there: is this vLLM's server root?)"
    : ` (vLLM serves /tokenize at the server root: ${suggested})`;
}

/** A model's context length as the upstream lists it. */
export interface ServedLength {
  readonly model: string;
  readonly maxModelLen: number;
}

/** What the upstream probe found. */
export type UpstreamProbe =
  | {
    readonly reachable: true;
    /** The URL asked, without credentials or query. */
    readonly url: string;
    readonly status: number;
    /** What is wrong though it answered (a 404, another shape, another context length), URL first. */
    readonly problem?: string;
    /** What is worth knowing and is not wrong (a key needed, no max_model_len). */
    readonly note?: string;
    /** The context length it serves, when it lists one. */
    readonly served?: ServedLength;
  }
  | {
    readonly reachable: false;
    readonly url: string;
    /** Where and what happened, such as `... : connection refused (...)`. */
    readonly problem: string;
  };

/** What the upstream probe checks the answer against. */
export interface UpstreamExpectation {
  /** The configured context length. */
  readonly contextLength: number;
  /** Where it came from, for the message. */
  readonly contextLengthSource: string;
  /** The one model budgeted, when the configuration names it. */
  readonly model?: string | undefined;
  /** Where the model came from, for the message, such as `--model (INCONTEXT_BUDGET_MODEL)`. */
  readonly modelSource?: string;
}

/** The largest `/v1/models` answer read. */
const MODELS_BYTES = 1024 * 1024;

/**
 * Asks the upstream for `GET /v1/models`. Any HTTP answer below 500 (even a
 * 401 for a missing key) means a server is there; a 404, an answer that is
 * not a model list, and a `max_model_len` other than the configured context
 * length are problems all the same.
 *
 * @param upstream The upstream root URL.
 * @param expected The context length (and model) to check the answer against.
 * @returns Whether it answered, how, and what is wrong.
 */
export async function probeUpstream(
  upstream: string,
  expected: UpstreamExpectation,
): Promise<UpstreamProbe> {
  const root = new URL(upstream);
  const target = `${root.origin}${root.pathname.replace(/\/+$/, "")}/v1/models`;
  const url = publicUrl(target);
  let response: Response;
  try {
    response = await fetch(target, {
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (error) {
    return {
      reachable: false,
      url,
      problem: `${url}: ${transportProblem(error, TIMEOUT_SECONDS)}`,
    };
  }
  const { status } = response;
  if (status >= 500) {
    await response.body?.cancel();
    return { reachable: false, url, problem: `${url} answered HTTP ${status}` };
  }
  if (status !== 200) {
    await response.body?.cancel();
    return {
      reachable: true,
      url,
      status,
      ...statusFinding(status, { url, root }),
    };
  }
  const bytes = await readLimited(response.body, MODELS_BYTES).catch(() =>
    undefined
  );
  return {
    reachable: true,
    url,
    status,
    ...modelsFinding(bytes, { url, expected }),
  };
}

/** What a status other than 200 says about the upstream URL. */
function statusFinding(
  status: number,
  { url, root }: { readonly url: string; readonly root: URL },
): { problem: string } | { note: string } {
  if (status === 401 || status === 403) {
    return {
      note:
        `it needs a key (HTTP ${status}), which clients send through the proxy`,
    };
  }
  if (status === 404) {
    const path = root.pathname.replace(/\/+$/, "");
    return {
      problem: path.endsWith("/v1")
        ? `${url} answered HTTP 404: the upstream is the server root, without /v1: ${root.origin}${
          path.slice(0, -3)
        }`
        : `${url} answered HTTP 404: is ${
          publicUrl(root.href)
        } the root of an OpenAI-compatible server?`,
    };
  }
  return { problem: `${url} answered HTTP ${status}` };
}

/** What a 200 answer of `/v1/models` says, checked against the configuration. */
function modelsFinding(
  bytes: Uint8Array | undefined,
  { url, expected }: {
    readonly url: string;
    readonly expected: UpstreamExpectation;
  },
): { problem?: string; note?: string; served?: ServedLength } {
  let body: unknown;
  try {
    body = bytes === undefined
      ? undefined
      : JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    body = undefined;
  }
  const data = (body as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(data)) {
    return {
      problem:
        `${url} answered, but not as an OpenAI-compatible server does (no model list)`,
    };
  }
  const listed = data.flatMap((entry) => {
    const { id, max_model_len: length } = (entry ?? {}) as {
      id?: unknown;
      max_model_len?: unknown;
    };
    return typeof id === "string" ? [{ id, length }] : [];
  });
  const { model, contextLength, contextLengthSource } = expected;
  const chosen = model === undefined
    ? listed
    : listed.filter((entry) => entry.id === model);
  if (model !== undefined && chosen.length === 0) {
    return {
      problem: `${url} lists no model ${
        JSON.stringify(model)
      }, the one budgeted (${
        expected.modelSource ?? "INCONTEXT_BUDGET_MODEL"
      })`,
    };
  }
  const lengths = new Set(chosen.map((entry) => entry.length));
  const [length] = lengths;
  if (
    lengths.size !== 1 || typeof length !== "number" ||
    !Number.isSafeInteger(length)
  ) {
    return {
      note: lengths.size > 1
        ? "its models list different max_model_len: set INCONTEXT_BUDGET_MODEL to check one"
        : "it lists no max_model_len: the context length is not checked against it",
    };
  }
  const served = { model: chosen[0]!.id, maxModelLen: length };
  if (length === contextLength) return { served };
  return {
    served,
    problem:
      `${url} lists max_model_len ${length} for ${served.model}, but the context length is ${contextLength} (${contextLengthSource}): set them equal`,
  };
}
