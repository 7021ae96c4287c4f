/**
 * The tables of `agent_turn.ts`: per path and size, the time of a turn direct
 * and through a proxy, the proxy's time to its budget decision, and how often
 * its count equalled the upstream's `usage`; per size, the reference
 * tokenizer's `/tokenize` time and count.
 *
 * @module
 */
import { printTable } from "./_proxy_bench_setup.ts";

/**
 * A path a turn is sent by: `baseline` is the proxy of another checkout, run
 * beside this one to compare two versions of the code in the same run.
 */
export type Path = "direct" | "incontext" | "baseline" | "portkey";

/** One turn sent by one path. */
export interface Sample {
  readonly turn: number;
  readonly ms: number;
  /** The proxy's count, from `x-incontext-prompt-tokens`. */
  readonly promptTokens?: number;
  /** The upstream's `usage.prompt_tokens`. */
  readonly usageTokens?: number;
  /** The request id sent, to find the proxy's access record. */
  readonly id: string;
}

/** One call of the reference tokenizer's `/tokenize`, before a turn is sent. */
export interface ReferenceSample {
  readonly turn: number;
  readonly ms: number;
  readonly count: number;
}

/** The turns a figure is taken from: nine turns ending near its size. */
export interface Bucket {
  readonly label: string;
  readonly turns: readonly [number, number];
}

/**
 * The buckets of `sizes` (tokens) for conversations growing by about
 * `turnTokens` a turn: the nine turns ending at the turn nearest each size.
 */
export function bucketsOf(
  sizes: readonly number[],
  turnTokens: number,
): Bucket[] {
  return sizes.map((size) => {
    const last = Math.max(9, Math.round(size / turnTokens));
    const label = size >= 1048576 && size % 1048576 === 0
      ? `${size / 1048576}M`
      : `${Math.round(size / 1024)}k`;
    return { label, turns: [last - 8, last] };
  });
}

function inBucket<T extends { readonly turn: number }>(
  samples: readonly T[],
  bucket: Bucket,
): T[] {
  return samples.filter((s) =>
    s.turn >= bucket.turns[0] && s.turn <= bucket.turns[1]
  );
}

/** The nearest-rank percentile `p` of `values`. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

const f = (ms: number) => ms.toFixed(2);
const signed = (ms: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(2)}`;
const mean = (values: readonly number[]) =>
  values.reduce((a, b) => a + b, 0) / values.length;

/** "equal / compared" of the proxy's count against `usage`, or "-" where neither was seen. */
function agreement(samples: readonly Sample[]): string {
  const compared = samples.filter((s) =>
    s.promptTokens !== undefined && s.usageTokens !== undefined
  );
  if (compared.length === 0) return "-";
  const equal = compared.filter((s) => s.promptTokens === s.usageTokens);
  return `${equal.length} / ${compared.length}`;
}

/**
 * Prints the table of one proxy's pass.
 *
 * @param title The pass's name.
 * @param samples The samples per path.
 * @param countTimes The proxy's time to its budget decision per request id.
 */
export function report(
  title: string,
  samples: ReadonlyMap<Path, readonly Sample[]>,
  countTimes: ReadonlyMap<string, number>,
  buckets: readonly Bucket[],
): void {
  console.log(`\n${title}`);
  const rows: string[][] = [];
  /** The added p50 per path, per bucket: for the growth ratio. */
  const added = new Map<string, number[]>();
  for (const bucket of buckets) {
    const direct = inBucket(samples.get("direct") ?? [], bucket).map((s) =>
      s.ms
    );
    const proxied = inBucket(samples.get("incontext") ?? [], bucket);
    const tokens = mean(proxied.map((s) => s.promptTokens ?? 0));
    const d50 = percentile(direct, 50);
    const d99 = percentile(direct, 99);
    for (const path of ["incontext", "baseline", "portkey"] as const) {
      const turns = inBucket(samples.get(path) ?? [], bucket);
      if (turns.length === 0) continue;
      const through = turns.map((s) => s.ms);
      const p50 = percentile(through, 50);
      const p99 = percentile(through, 99);
      added.set(path, [...added.get(path) ?? [], p50 - d50]);
      const counts = turns.flatMap((s) => {
        const ms = countTimes.get(s.id);
        return ms === undefined ? [] : [ms];
      });
      rows.push([
        bucket.label,
        String(Math.round(tokens)),
        path,
        String(turns.length),
        `${f(d50)} / ${f(d99)}`,
        `${f(p50)} / ${f(p99)}`,
        signed(p50 - d50),
        signed(p99 - d99),
        (p99 / p50).toFixed(2),
        counts.length === 0
          ? "-"
          : `${f(percentile(counts, 50))} / ${f(percentile(counts, 99))}`,
        agreement(turns),
      ]);
    }
  }
  printTable([
    "near",
    "mean prompt tokens",
    "path",
    "turns",
    "direct p50 / p99 ms",
    "through p50 / p99 ms",
    "added p50",
    "added p99",
    "p99 / p50",
    "of which reading + counting p50 / p99 ms",
    "count = usage",
  ], rows);
  const all = samples.get("incontext") ?? [];
  console.log(`count = usage over every turn: ${agreement(all)}`);
  const first = buckets[0]!;
  const last = buckets.at(-1)!;
  for (const [path, values] of added) {
    if (values.length < 2) continue;
    console.log(
      `${path}: added p50 near ${last.label} / near ${first.label} = ${
        signed(values.at(-1)!)
      } / ${signed(values[0]!)} ms = ${
        (values.at(-1)! / values[0]!).toFixed(2)
      }x`,
    );
  }
}

/**
 * Prints the reference tokenizer's `/tokenize` times per size.
 *
 * @param title What the reference is.
 * @param samples Its calls, one per turn.
 */
export function reportReference(
  title: string,
  samples: readonly ReferenceSample[],
  buckets: readonly Bucket[],
): void {
  console.log(`\n${title}`);
  printTable(
    ["near", "mean count", "calls", "/tokenize p50 / p99 ms"],
    buckets.map((bucket) => {
      const calls = inBucket(samples, bucket);
      const ms = calls.map((s) => s.ms);
      return [
        bucket.label,
        String(Math.round(mean(calls.map((s) => s.count)))),
        String(calls.length),
        `${f(percentile(ms, 50))} / ${f(percentile(ms, 99))}`,
      ];
    }),
  );
}

/**
 * The proxy's own count verifications, from `incontext_count_verifications_total`
 * in its metrics, or a line saying it has none.
 *
 * @param metrics The text of `/incontext/metrics`.
 */
export function verifications(metrics: string): string {
  const found = new Map<string, number>();
  for (const line of metrics.split("\n")) {
    const match =
      /^incontext_count_verifications_total\{[^}]*result="(\w+)"[^}]*\}\s+(\S+)/
        .exec(line);
    if (match !== null) {
      found.set(match[1]!, (found.get(match[1]!) ?? 0) + Number(match[2]));
    }
  }
  if (found.size === 0) {
    return "the proxy exposes no incontext_count_verifications_total: the column count = usage is the benchmark's own";
  }
  const equal = found.get("equal") ?? 0;
  const all = [...found.values()].reduce((a, b) => a + b, 0);
  return `the proxy's count verifications over the pass: ${equal} equal of ${all} (${
    [...found].map(([result, n]) => `${result} ${n}`).join(", ")
  })`;
}
