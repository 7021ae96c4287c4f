/**
 * The process metrics a Deno or Node server reports cheaply, under the names
 * Prometheus' client libraries use: resident memory, CPU time, start time,
 * and the event loop's lag. Read at scrape time: nothing runs between scrapes.
 */
import process from "node:process";
import { setImmediate } from "node:timers";
import { counter, gauge } from "../_internal/metrics.ts";

/**
 * The process metrics' exposition lines. The event loop's lag is how long a
 * callback queued now waits for the loop: what every request in flight
 * waits too.
 */
export async function processMetrics(): Promise<string[]> {
  const lag = await eventLoopLagSeconds();
  const { user, system } = process.cpuUsage();
  return [
    ...gauge(
      "process_resident_memory_bytes",
      "Resident memory size in bytes.",
      process.memoryUsage.rss(),
    ),
    ...counter(
      "process_cpu_seconds_total",
      "User and system CPU time spent, in seconds.",
      (user + system) / 1e6,
    ),
    ...gauge(
      "process_start_time_seconds",
      "Start time of the process since the Unix epoch, in seconds.",
      Math.floor(performance.timeOrigin / 1000),
    ),
    ...gauge(
      "incontext_event_loop_lag_seconds",
      "How long a callback queued at scrape time waited for the event loop, in seconds.",
      lag,
    ),
  ];
}

function eventLoopLagSeconds(): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) =>
    setImmediate(() => resolve((performance.now() - start) / 1000))
  );
}
