/**
 * The incontext proxy server: an OpenAI-compatible reverse proxy that gives
 * every request exactly the output budget left below the compression window.
 *
 *     deno run -A --config deno.json examples/server.ts --upstream http://127.0.0.1:8000
 *
 * `--help` lists every flag and variable. SIGTERM or SIGINT stop accepting
 * connections and let requests in flight finish; those still running after
 * INCONTEXT_SHUTDOWN_GRACE_SECONDS are ended.
 */
import { configure, getConsoleSink, getLogger } from "@logtape/logtape";
import {
  backends,
  ConfigError,
  loadBackendModules,
  sharedCountCache,
} from "../mod.ts";
import { createProxyHandler } from "../src/proxy/mod.ts";
import { AnchoredBackend } from "../src/backends/anchored/mod.ts";
import { LocalBackend } from "../src/backends/local/mod.ts";
import { SglangBackend } from "../src/backends/sglang/mod.ts";
import { HELP, resolveServerSettings } from "./_cli.ts";

await configure({
  sinks: { console: getConsoleSink() },
  loggers: [
    { category: ["incontext"], lowestLevel: "info", sinks: ["console"] },
    {
      category: ["logtape", "meta"],
      lowestLevel: "warning",
      sinks: ["console"],
    },
  ],
});
const logger = getLogger(["incontext", "server"]);

let settings;
try {
  settings = await resolveServerSettings(Deno.args, Deno.env.toObject());
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error("incontext: invalid configuration");
  for (const issue of error.issues) {
    console.error(`  ${issue.variable} ${issue.rule}`);
  }
  console.error("Run with --help for every flag and variable.");
  Deno.exit(2);
}
if (settings === "help") {
  console.log(HELP);
  Deno.exit(0);
}

const { config } = settings;
await loadBackendModules(config.backendModules, {
  importModule: (specifier) => import(specifier),
});
// The proxy is one thread serving requests: a worker-hosted cache would only
// add a round trip (~0.2 ms a request here). Created first, this in-process
// cache is the shared one the bundled backends then use. The local backend
// counts inside its cache's core instead: there a worker keeps loading and
// tokenizing off the thread that serves requests.
const cache = sharedCountCache({
  maxEntries: config.cacheEntries,
  inProcess: config.backend !== "local",
});
const backend = backends.one(config.backend, config);
if (backend instanceof LocalBackend || backend instanceof SglangBackend) {
  // Fail at start-up, not on the first request, when the files are not the
  // expected ones; log which files are used (their hashes, never content).
  // The local backend loads them where it counts: the cache's worker.
  try {
    const files = await backend.load();
    logger.info(
      "tokenizer files loaded: tokenizer.json sha256={tokenizer} tokenizer_config.json sha256={tokenizerConfig} chat template sha256={template}",
      { ...files },
    );
  } catch (error) {
    console.error(
      `incontext: cannot load the tokenizer files of INCONTEXT_TOKENIZER_DIR: ${
        error instanceof Error ? error.message : typeof error
      }`,
    );
    await cache[Symbol.asyncDispose]();
    Deno.exit(1);
  }
}
// Aborted when the shutdown grace period is over: it ends what is still in flight.
const graceOver = new AbortController();
const handler = createProxyHandler({
  upstream: settings.upstream,
  window: settings.window,
  contextLength: settings.contextLength,
  backend,
  fallbackMarginTokens: config.fallbackMarginTokens,
  minOutputTokens: config.minOutputTokens,
  onExhausted: config.onExhausted,
  anchorEntries: config.anchorEntries,
  anchorTolerance: config.anchorTolerance,
  maxRequestBytes: config.maxRequestBytes,
  upstreamTimeoutSeconds: config.upstreamTimeoutSeconds,
  upstreamIdleTimeoutSeconds: config.upstreamIdleTimeoutSeconds,
  signal: graceOver.signal,
  cache,
  // The anchored backend counts from the usage this proxy records: one store.
  ...(backend instanceof AnchoredBackend ? { anchors: backend.anchors } : {}),
  ...(config.model === undefined ? {} : { route: { model: config.model } }),
});

const server = Deno.serve({
  hostname: settings.hostname,
  port: settings.port,
  onListen: ({ hostname, port }) => {
    const host = hostname.includes(":") ? `[${hostname}]` : hostname;
    console.log(
      `incontext proxy listening on http://${host}:${port}: window=${settings.window} context_length=${settings.contextLength} backend=${backend.source}`,
    );
  },
  // A stream the upstream cut mid-way ends the client's stream; log its type only.
  onError: (error) => {
    logger.warn("response stream failed: error={error}", {
      error: error instanceof Error ? error.name : typeof error,
    });
    return new Response(null, { status: 502 });
  },
}, handler);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info("stopping: finishing requests in flight");
  // shutdown() waits for every response to end; after the grace period the
  // proxy's signal ends the upstream requests behind the ones left, so it
  // returns. (Aborting Deno.serve's own signal after shutdown() throws.)
  const timer = setTimeout(() => {
    logger.warn("grace period of {seconds} s over: ending requests in flight", {
      seconds: config.shutdownGraceSeconds,
    });
    graceOver.abort();
  }, config.shutdownGraceSeconds * 1000);
  await server.shutdown();
  clearTimeout(timer);
  await cache[Symbol.asyncDispose]();
}
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, () => void stop());
}
await server.finished;
