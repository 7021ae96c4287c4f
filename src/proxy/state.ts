/**
 * What the proxy remembers: metrics, usage anchors and its last decisions.
 *
 * @module
 */
import type { RequestKind } from "../core/backend.ts";
import type { BudgetResult } from "../core/budget.ts";
import { Counter, Histogram } from "../_internal/metrics.ts";
import type { AnchorStore } from "../anchors/store.ts";
import { GrownBodies } from "../bridges/grown_bodies.ts";
import type { ProxyOptions, ProxySettings } from "./options.ts";
import type { BridgeOptions } from "../bridges/options.ts";
import type { TimedBackend } from "./timed_backend.ts";
import type { Readiness } from "./readiness.ts";
import { CountVerification } from "./verification.ts";

/** Everything the proxy's parts share. */
export interface ProxyContext {
  readonly options: ProxyOptions;
  readonly settings: ProxySettings;
  readonly state: ProxyState;
  readonly backend: TimedBackend;
  /** The budget options every request is budgeted with. */
  readonly bridge: BridgeOptions;
  /** The last readiness probe. */
  readonly readiness: Readiness;
}

/** One budget decision as `GET /incontext/context` shows it. */
export interface DecisionRecord {
  /** When it was made (ISO 8601). */
  readonly time: string;
  /** The endpoint kind: chat, completion or responses. */
  readonly kind: RequestKind;
  /** The request's model, or null. */
  readonly model: string | null;
  /** set, compress, unchanged. */
  readonly action: string;
  /** Where the prompt count came from. */
  readonly source: string;
  /** The prompt tokens counted (or estimated). */
  readonly promptTokens: number | null;
  /** The prompt size the usage anchor implies, when the conversation has one. */
  readonly anchorTokens: number | null;
  /** The cap sent, when one was written. */
  readonly maxTokens: number | null;
  /** Why: the counts, or why the request went on unbudgeted (never request content). */
  readonly reason: string;
  /** Whether the proxy answered 400 itself (policy `reject`) instead of sending it. */
  readonly rejected: boolean;
}

/** Seconds: from a fake upstream (~1 ms) to a long generation (10 min). */
const UPSTREAM_BUCKETS: readonly number[] = [
  0.005,
  0.025,
  0.1,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  300,
  600,
];

/** Shared, bounded state of one proxy. */
export class ProxyState {
  readonly requests = new Counter(
    "incontext_requests_total",
    "Requests to the upstream's routes, by route and budget action.",
  );
  readonly endpoints = new Counter(
    "incontext_endpoint_requests_total",
    "Requests to the proxy's own endpoints under /incontext/, by endpoint.",
  );
  readonly upstreamSeconds = new Histogram(
    "incontext_upstream_seconds",
    "Time from sending a budgeted request upstream to its answer (headers; a small JSON answer whole), in seconds.",
    UPSTREAM_BUCKETS,
  );
  readonly counts = new Counter(
    "incontext_counts_total",
    "Prompt counts by kind: exact, anchor, fallback or none.",
  );
  readonly tokenizer = new Histogram(
    "incontext_tokenizer_seconds",
    "Time of exact counts (including cache hits), by outcome.",
  );
  readonly upstream = new Counter(
    "incontext_upstream_responses_total",
    "Upstream responses by status code (0: unreachable).",
  );
  readonly upstreamErrors = new Counter(
    "incontext_upstream_errors_total",
    "Upstream exchanges that failed without a complete answer: unreachable (no answer) or truncated (the body ended early).",
  );
  readonly disconnects = new Counter(
    "incontext_client_disconnects_total",
    "Clients that went away before their answer began: while their request body was still arriving (phase upload), their prompt was counted (phase count) or the upstream was asked (phase upstream).",
  );
  readonly timeouts = new Counter(
    "incontext_upstream_timeouts_total",
    "Upstream requests the proxy ended: no headers in time (phase headers) or a body idle too long (phase body).",
  );
  readonly disagreements = new Counter(
    "incontext_anchor_disagreements_total",
    "Exact counts that differ from the usage anchor by more than the tolerance.",
  );
  /** Exact counts checked against their response's usage. */
  readonly verification = new CountVerification();
  readonly anchors: AnchorStore;
  /** Recent bodies' parses: a grown conversation's body parses its new text only. */
  readonly bodies: GrownBodies = new GrownBodies();
  /** Each decision with its time in ms: written out only when shown. */
  readonly #recent: [number, Omit<DecisionRecord, "time">][] = [];
  readonly #keep: number;

  constructor(anchors: AnchorStore, keepDecisions: number) {
    this.anchors = anchors;
    this.#keep = keepDecisions;
  }

  /** Remembers a decision made now for `/incontext/context`, dropping the oldest. */
  remember(record: Omit<DecisionRecord, "time">): void {
    this.#recent.push([Date.now(), record]);
    if (this.#recent.length > this.#keep) this.#recent.shift();
  }

  /** The remembered decisions, newest last. */
  recent(): DecisionRecord[] {
    return this.#recent.map(([time, record]) => ({
      time: new Date(time).toISOString(),
      ...record,
    }));
  }
}

/** The count kind a result's source stands for, for metrics. */
export function countKind(result: BudgetResult): string {
  switch (result.source) {
    case "rough-fallback":
      return "fallback";
    case "usage-anchor":
      return "anchor";
    case "none":
      return "none";
    default:
      return result.promptTokens === undefined ? "none" : "exact";
  }
}
