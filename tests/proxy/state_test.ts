// Covers: src/proxy/state.ts, src/proxy/endpoints.ts, src/proxy/process_metrics.ts
import { ok, strictEqual } from "node:assert/strict";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { VERSION } from "../../src/core/version.ts";
import { postJson, proxyFixture } from "../_kit/proxy_fixture.ts";

/** One metric family as the Prometheus text parser reads it. */
interface Family {
  readonly name: string;
  readonly type: string;
  readonly help: string;
  readonly metrics: readonly {
    readonly value?: string;
    readonly count?: string;
    readonly labels?: Record<string, string>;
  }[];
}

async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(`${url}/incontext/metrics`);
  strictEqual(
    response.headers.get("content-type"),
    "text/plain; version=0.0.4; charset=utf-8",
  );
  const families = parsePrometheusTextFormat(
    await response.text(),
  ) as Family[];
  return new Map(families.map((family) => [family.name, family]));
}

/** The value of the series with exactly these labels, or undefined. */
function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const series = families.get(name)?.metrics.find((metric) => {
    const own = metric.labels ?? {};
    return Object.keys(own).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => own[k] === v);
  });
  return series?.value === undefined ? undefined : Number(series.value);
}

const chat = (content: string, max_tokens?: number) => ({
  model: "m",
  messages: [{ role: "user", content }],
  ...(max_tokens === undefined ? {} : { max_tokens }),
});

Deno.test("/incontext/metrics follows Prometheus' naming rules, as a Prometheus text parser reads it", async () => {
  await using proxy = await proxyFixture();
  (await postJson(`${proxy.baseUrl}/chat/completions`, chat("x"))).body
    ?.cancel();
  const families = await scrape(proxy.url);
  ok(families.size > 10, [...families.keys()].join(", "));
  for (const family of families.values()) {
    ok(family.help.length > 0, `${family.name} has help`);
    if (family.type === "COUNTER") {
      ok(family.name.endsWith("_total"), `counter ${family.name}`);
    } else {
      ok(!family.name.endsWith("_total"), `${family.type} ${family.name}`);
    }
    if (/seconds|duration|latency/.test(family.name)) {
      ok(/_seconds(_total)?$/.test(family.name), family.name);
    }
  }
  strictEqual(families.get("incontext_tokenizer_seconds")?.type, "HISTOGRAM");
  strictEqual(families.get("incontext_upstream_seconds")?.type, "HISTOGRAM");
  strictEqual(
    families.get("incontext_upstream_seconds")?.metrics[0]?.count,
    "1",
  );
  strictEqual(
    valueOf(families, "incontext_build_info", { version: VERSION }),
    1,
  );
  strictEqual(families.get("incontext_build_info")?.type, "GAUGE");
});

Deno.test("/incontext/metrics counts cache hits and misses as counters", async () => {
  await using proxy = await proxyFixture();
  for (let i = 0; i < 3; i++) {
    const response = await postJson(
      `${proxy.baseUrl}/chat/completions`,
      chat("the same conversation"),
    );
    await response.body?.cancel();
  }
  const families = await scrape(proxy.url);
  strictEqual(families.get("incontext_cache_hits_total")?.type, "COUNTER");
  strictEqual(families.get("incontext_cache_misses_total")?.type, "COUNTER");
  strictEqual(valueOf(families, "incontext_cache_misses_total"), 1);
  strictEqual(valueOf(families, "incontext_cache_hits_total"), 2);
  strictEqual(valueOf(families, "incontext_cache_entries"), 1);
  strictEqual(
    valueOf(families, "incontext_requests_total", {
      route: "chat",
      action: "set",
    }),
    3,
  );
  strictEqual(
    valueOf(families, "incontext_counts_total", { kind: "exact" }),
    3,
  );
  strictEqual(
    valueOf(families, "incontext_upstream_responses_total", { status: "200" }),
    3,
  );
});

Deno.test("/incontext/metrics counts the proxy's own endpoints apart from the upstream's routes", async () => {
  await using proxy = await proxyFixture();
  for (const path of ["livez", "context", "context", "nothing-here"]) {
    await (await fetch(`${proxy.url}/incontext/${path}`)).body?.cancel();
  }
  (await fetch(`${proxy.baseUrl}/models`)).body?.cancel();
  const families = await scrape(proxy.url);
  const routes = families.get("incontext_requests_total")!.metrics.map((m) =>
    m.labels?.route
  );
  strictEqual(routes.join(","), "passthrough");
  const endpoint = (name: string) =>
    valueOf(families, "incontext_endpoint_requests_total", { endpoint: name });
  strictEqual(endpoint("livez"), 1);
  strictEqual(endpoint("context"), 2);
  strictEqual(endpoint("unknown"), 1);
  // This scrape counts itself: it was served before it rendered.
  strictEqual(endpoint("metrics"), 1);
});

Deno.test("/incontext/metrics counts a refused request once, as rejected", async () => {
  await using proxy = await proxyFixture({ onExhausted: "reject" });
  const response = await postJson(
    `${proxy.baseUrl}/chat/completions`,
    chat("lorem ".repeat(60_000)),
  );
  strictEqual(response.status, 400);
  await response.body?.cancel();
  const families = await scrape(proxy.url);
  const series = families.get("incontext_requests_total")!.metrics;
  strictEqual(series.length, 1);
  strictEqual(series[0]!.labels?.action, "rejected");
  strictEqual(series[0]!.value, "1");
});

Deno.test("/incontext/metrics reports the process's memory, CPU time, start time and event-loop lag", async () => {
  await using proxy = await proxyFixture();
  const families = await scrape(proxy.url);
  const rss = valueOf(families, "process_resident_memory_bytes")!;
  ok(rss > 1024 * 1024, `rss ${rss}`);
  ok(valueOf(families, "process_cpu_seconds_total")! > 0);
  const start = valueOf(families, "process_start_time_seconds")!;
  ok(start <= Date.now() / 1000 && start > Date.now() / 1000 - 3600);
  const lag = valueOf(families, "incontext_event_loop_lag_seconds")!;
  ok(lag >= 0 && lag < 60, `lag ${lag}`);
});
