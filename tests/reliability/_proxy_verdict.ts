/**
 * Judges each load outcome against what the upstream did with that request:
 * the bytes the fake answers (replayed on a fault-free twin with the body
 * the proxy sent) must reach the client unchanged; a cut must end the
 * client's stream with an error after a prefix of them; a 5xx must pass
 * through as it was.
 */
import {
  createFakeUpstreamHandler,
  type FakeUpstreamFault,
  type FakeUpstreamHandler,
  type FakeUpstreamRequest,
} from "../../src/testing/mod.ts";
import {
  echoReply,
  LOAD_ID,
  normalise,
  type Outcome,
  quantile,
  type TimedUpstream,
} from "./_proxy_load.ts";

/** What one outcome amounts to. */
export interface Verdict {
  readonly id: string;
  /** What happened, for the report: "ok ...", "cut ...", "upstream 503 ...". */
  readonly kind: string;
  /** Why the outcome breaks the promise, when it does. */
  readonly broken?: string;
  /** Client time minus the upstream's own time, for complete answers. */
  readonly addedMs?: number;
}

const twins = new Map<FakeUpstreamFault, FakeUpstreamHandler>();

/** The fake's answer to `sent`, as the client must have received it. */
async function expected(
  sent: FakeUpstreamRequest,
): Promise<{ status: number; text: string }> {
  const fault = sent.fault === "http-500" || sent.fault === "http-503"
    ? sent.fault
    : "none";
  let twin = twins.get(fault);
  if (twin === undefined) {
    twin = createFakeUpstreamHandler({
      maxModelLen: 65536,
      reply: echoReply,
      fault,
    });
    twins.set(fault, twin);
  }
  twin.requests.length = 0;
  const response = await twin.fetch(`http://fake.test${sent.path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: sent.text,
  });
  return { status: response.status, text: normalise(await response.text()) };
}

/** The text the streamed deltas spell. */
function streamedContent(text: string): string {
  let content = "";
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    content += JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "";
  }
  return content;
}

async function verdict(
  outcome: Outcome,
  sent: FakeUpstreamRequest | undefined,
  upstream: TimedUpstream,
): Promise<Verdict> {
  const { id } = outcome;
  if (sent === undefined) {
    return {
      id,
      kind: `never reached the upstream (${outcome.failed ?? outcome.status})`,
      broken: "no upstream request",
    };
  }
  const want = await expected(sent);
  const got = normalise(outcome.text);
  if (sent.fault === "cut") {
    const clear = outcome.failed === "read" && outcome.status === 200 &&
      want.text.startsWith(got);
    return {
      id,
      kind: "cut mid-stream, client stream errored",
      ...(clear
        ? {}
        : { broken: `cut but ${outcome.failed} ${outcome.status}` }),
    };
  }
  if (sent.fault === "http-500" || sent.fault === "http-503") {
    const same = outcome.status === want.status && got === want.text &&
      !outcome.failed;
    return {
      id,
      kind: `upstream ${want.status} passed through`,
      ...(same ? {} : { broken: "5xx answer altered" }),
    };
  }
  if (outcome.failed || outcome.status !== 200 || got !== want.text) {
    return {
      id,
      kind: `unexpected ${outcome.failed ?? outcome.status}`,
      broken: got === want.text ? "failed" : "bytes differ",
    };
  }
  // The bytes match the twin's answer to this very body; spell it out too.
  if (streamedContent(outcome.text) !== echoReply(JSON.parse(sent.text))) {
    return { id, kind: "mixed", broken: "another request's content" };
  }
  const timing = upstream.timings.get(id);
  const own = timing?.end === undefined ? undefined : timing.end - timing.start;
  return {
    id,
    kind: sent.fault === "delay" ? "ok after an upstream delay" : "ok",
    ...(own === undefined
      ? {}
      : { addedMs: outcome.end - outcome.start - own }),
  };
}

/** Judges every outcome against the upstream's record of its request. */
export async function judge(
  outcomes: readonly Outcome[],
  upstream: TimedUpstream,
): Promise<Verdict[]> {
  const sentById = new Map<string, FakeUpstreamRequest>();
  for (const sent of upstream.fake.requests) {
    const id = sent.headers[LOAD_ID];
    if (id !== undefined && sent.path === "/v1/chat/completions") {
      sentById.set(id, sent);
    }
  }
  const verdicts: Verdict[] = [];
  for (const outcome of outcomes) {
    verdicts.push(await verdict(outcome, sentById.get(outcome.id), upstream));
  }
  return verdicts;
}

/** The verdicts by kind, as `kind=n, ...`. */
export function tally(verdicts: readonly Verdict[]): string {
  const kinds = new Map<string, number>();
  for (const v of verdicts) kinds.set(v.kind, (kinds.get(v.kind) ?? 0) + 1);
  return [...kinds].sort().map(([k, n]) => `${k}=${n}`).join(", ");
}

/** The latency the proxy added to the complete answers, as p50 and p99. */
export function latency(verdicts: readonly Verdict[]): string {
  const added = verdicts.flatMap((v) =>
    v.addedMs === undefined ? [] : [v.addedMs]
  );
  return `p50 ${quantile(added, 0.5).toFixed(1)} ms, p99 ${
    quantile(added, 0.99).toFixed(1)
  } ms (${added.length} complete answers)`;
}
