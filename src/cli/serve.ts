/**
 * `incontext serve`: the budgeting proxy as a process. Flags and the
 * environment give the settings; SIGTERM or SIGINT stop accepting
 * connections and let requests in flight finish, and those still running
 * after `INCONTEXT_SHUTDOWN_GRACE_SECONDS` are ended.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { backends } from "../backends/registry.ts";
import { AnchoredBackend } from "../backends/anchored/mod.ts";
import { LocalBackend } from "../backends/local/mod.ts";
import { SglangBackend } from "../backends/sglang/mod.ts";
import { sharedCountCache } from "../cache/mod.ts";
import { loadBackendModules } from "../config/plugins.ts";
import { createProxyHandler } from "../proxy/mod.ts";
import {
  connectionBounds,
  processLimits,
  startHttpServer,
} from "../proxy/http_server.ts";
import { configured } from "./config_failure.ts";
import { configureConsoleLog } from "./console_log.ts";
import { HELP, resolveServerSettings } from "./serve_settings.ts";

const logger = getLogger(["incontext", "server"]);

/**
 * Runs the proxy until SIGTERM or SIGINT.
 *
 * @param args The command's arguments, after `serve`.
 * @param env The environment.
 * @returns The process exit code: 0 after a clean stop, 1 when the tokenizer
 * files cannot be loaded, 2 for a bad setting.
 */
export async function serveCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  await configureConsoleLog();
  const resolved = await configured(
    "incontext serve",
    () => resolveServerSettings(args, env),
  );
  if ("exitCode" in resolved) return resolved.exitCode;
  const settings = resolved.value;
  if (settings === "help") {
    console.log(HELP);
    return 0;
  }
  const { config } = settings;
  await loadBackendModules(config.backendModules, {
    importModule: (specifier) => import(specifier),
  });
  // The proxy is one thread serving requests: a worker-hosted cache would
  // only add a round trip. Created first, this in-process cache is the shared
  // one the bundled backends then use. The local backend counts inside its
  // cache's core instead: there a worker keeps loading and tokenizing off the
  // thread that serves requests.
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
      return 1;
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
    contextEndpoint: config.contextEndpoint,
    ...(config.adminToken === undefined
      ? {}
      : { adminToken: config.adminToken }),
    cache,
    // The anchored backend counts from the usage this proxy records: one store.
    ...(backend instanceof AnchoredBackend ? { anchors: backend.anchors } : {}),
    ...(config.model === undefined ? {} : { route: { model: config.model } }),
  });

  // node:http, not Deno.serve: it bounds the time to send a request's head
  // and body, idle keep-alive connections and the connections open at once.
  const requestTimeoutMs = config.requestTimeoutSeconds * 1000;
  const { maxConnections, backlog } = connectionBounds(
    config.maxConnections,
    processLimits(),
  );
  if (maxConnections < config.maxConnections) {
    logger.warn(
      "INCONTEXT_MAX_CONNECTIONS lowered from {wanted} to {cap}: the open-file limit (ulimit -n) allows no more",
      { wanted: config.maxConnections, cap: maxConnections },
    );
  }
  const server = await startHttpServer(handler, {
    hostname: settings.hostname,
    port: settings.port,
    headersTimeoutMs: Math.min(
      config.headersTimeoutSeconds * 1000,
      requestTimeoutMs,
    ),
    requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutSeconds * 1000,
    maxConnections,
    backlog,
  });
  const host = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  console.log(
    `incontext proxy listening on http://${host}:${server.port}: window=${settings.window} context_length=${settings.contextLength} backend=${backend.source}`,
  );

  let onStopped = () => {};
  const stopped = new Promise<void>((resolve) => onStopped = resolve);
  let stopping = false;
  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info("stopping: finishing requests in flight");
    // close() waits for every connection to end; after the grace period the
    // proxy's signal ends every exchange still running, and what remains
    // (a client that never reads its error) is closed.
    const timer = setTimeout(() => {
      logger.warn(
        "grace period of {seconds} s over: ending requests in flight",
        { seconds: config.shutdownGraceSeconds },
      );
      graceOver.abort();
      server.closeAll();
    }, config.shutdownGraceSeconds * 1000);
    await server.close();
    clearTimeout(timer);
    await cache[Symbol.asyncDispose]();
    onStopped();
  }
  const signals = ["SIGTERM", "SIGINT"] as const;
  const onSignal = () => void stop();
  for (const signal of signals) Deno.addSignalListener(signal, onSignal);
  await stopped;
  for (const signal of signals) Deno.removeSignalListener(signal, onSignal);
  return 0;
}
