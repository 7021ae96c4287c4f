/**
 * A small Prometheus registry: counters and histograms with labels,
 * rendered in the text exposition format (version 0.0.4). Label values come
 * from fixed sets (routes, actions, count kinds, status codes), so the
 * number of series stays bounded. It declares no metric of its own.
 *
 * @module
 */
type Labels = Readonly<Record<string, string>>;

interface Series {
  /** The rendered label set, such as `{route="chat"}`. */
  readonly text: string;
  value: number;
}

interface HistogramSeries {
  readonly labels: Labels;
  readonly counts: number[];
  sum: number;
  count: number;
}

/** Seconds: from a cache hit (~0.1 ms) to a slow tokenizer (10 s). */
export const LATENCY_BUCKETS: readonly number[] = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  10,
];

/** A monotonically increasing counter family. */
export class Counter {
  readonly #series = new Map<string, Series>();
  /** The metric name and its help text. */
  constructor(readonly name: string, readonly help: string) {}

  /** Adds `value` (default 1) to the series with these labels. */
  inc(labels: Labels = {}, value = 1): void {
    const key = seriesKey(labels);
    const series = this.#series.get(key);
    if (series) series.value += value;
    else this.#series.set(key, { text: labelText(labels), value });
  }

  /** The current value of one series (0 when absent). */
  value(labels: Labels = {}): number {
    return this.#series.get(seriesKey(labels))?.value ?? 0;
  }

  /** The exposition lines of this family. */
  render(): string[] {
    const lines = [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} counter`,
    ];
    for (const series of this.#series.values()) {
      lines.push(`${this.name}${series.text} ${series.value}`);
    }
    return lines;
  }
}

/** A histogram family with fixed buckets. */
export class Histogram {
  readonly #series = new Map<string, HistogramSeries>();
  /** The metric name, its help text and the bucket upper bounds. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[] = LATENCY_BUCKETS,
  ) {}

  /** Records one observation in the series with these labels. */
  observe(value: number, labels: Labels = {}): void {
    const key = seriesKey(labels);
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const { buckets } = this;
    const { counts } = series;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= buckets[i]!) counts[i]! += 1;
    }
    series.sum += value;
    series.count += 1;
  }

  /** The exposition lines of this family. */
  render(): string[] {
    const lines = [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} histogram`,
    ];
    for (const series of this.#series.values()) {
      this.buckets.forEach((bound, i) => {
        const labels = labelText({ ...series.labels, le: String(bound) });
        lines.push(`${this.name}_bucket${labels} ${series.counts[i]}`);
      });
      lines.push(
        `${this.name}_bucket${
          labelText({ ...series.labels, le: "+Inf" })
        } ${series.count}`,
      );
      lines.push(`${this.name}_sum${labelText(series.labels)} ${series.sum}`);
      lines.push(
        `${this.name}_count${labelText(series.labels)} ${series.count}`,
      );
    }
    return lines;
  }
}

/** A value read at scrape time, such as a cache's size. */
export function gauge(
  name: string,
  help: string,
  value: number,
  labels: Labels = {},
): string[] {
  return [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} gauge`,
    `${name}${labelText(labels)} ${value}`,
  ];
}

/**
 * A counter kept elsewhere and read at scrape time, such as a cache's hits:
 * a total that only grows, so its type is counter and its name ends in
 * `_total`.
 */
export function counter(name: string, help: string, value: number): string[] {
  return [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} counter`,
    `${name} ${value}`,
  ];
}

/**
 * Identifies a label set without rendering it (no escaping, no sorting): the
 * lengths keep any two sets apart, so rendering happens once per series.
 */
function seriesKey(labels: Labels): string {
  let key = "";
  for (const name in labels) {
    const value = labels[name]!;
    key += `${name.length}:${name}${value.length}:${value}`;
  }
  return key;
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return "";
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(
    /\n/g,
    "\\n",
  );
}
