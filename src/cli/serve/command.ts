/**
 * `incontext serve`: the budgeting proxy as a process. Flags and the
 * environment give the settings; the tokenizer and the upstream are probed
 * once at start; SIGTERM, SIGINT or SIGHUP stop accepting connections and
 * let requests in flight finish, and those still running after
 * `INCONTEXT_SHUTDOWN_GRACE_SECONDS` are ended.
 *
 * @module
 */
import { dispose, getLogger } from "@logtape/logtape";
import { AnchoredBackend } from "../../backends/anchored/mod.ts";
import { ConfigError } from "../../core/config_error.ts";
import {
  createExactFetch,
  createProxyHandler,
  type ExactFetch,
  Readiness,
} from "../../proxy/mod.ts";
import { configured } from "../config_failure.ts";
import { configureConsoleLog, logSettings } from "../console_log.ts";
import { publicUrl } from "../setup/endpoint_problem.ts";
import { prepare, type Prepared } from "../setup/prepare.ts";
import { probeUpstream, type TokenizerProbe } from "../setup/probes.ts";
import { type LinkProbe, probeLinks } from "../setup/backend_chain.ts";
import type { ContextLengthMismatchError } from "../../core/errors.ts";
import { HELP } from "../setup/help.ts";
import { listenProblem } from "../listen_problem.ts";
import { onStopSignals } from "../stop_signals.ts";
import { hermesLive } from "../../bridges/hermes/live.ts";
import { openSharedLayer, type SharedLayer } from "./replicas.ts";
import { serverRefusals } from "./refusals.ts";
import { chainMoves } from "./chain_moves.ts";
import {
  connectionBounds,
  type HttpServer,
  processLimits,
  startHttpServer,
} from "../../server/http_server.ts";
import type {
  ReadinessProbe,
  TokenizerReadiness,
} from "../../proxy/readiness.ts";

const logger = getLogger(["incontext", "server"]);
const COMMAND = "incontext serve";

/**
 * Runs the proxy until SIGTERM, SIGINT or SIGHUP.
 *
 * @param args The command's arguments, after `serve`.
 * @param env The environment.
 * @returns The process exit code: 0 after a clean stop, 2 for a bad setting
 * (including a context length the tokenizer contradicts, and an address
 * already in use).
 */
export async function serveCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  await configureConsoleLog({ ...logSettings(env), nonBlocking: true });
  try {
    return await serve(args, env);
  } finally {
    // Writes the records still buffered.
    await dispose();
  }
}

async function serve(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const started = await configured(COMMAND, async () => {
    const prepared = await prepare(args, env);
    if (prepared === "help") return "help";
    let listening: Listening;
    try {
      listening = await listen(prepared);
    } catch (error) {
      await prepared[Symbol.asyncDispose]();
      throw error;
    }
    // Handled from the moment the port is open: a supervisor may stop the
    // proxy while it still probes.
    const running = stopOnSignals({ prepared, ...listening });
    try {
      listening.readiness.record(await probe(prepared));
    } catch (error) {
      await running.stop();
      throw error;
    }
    announce(prepared, listening.server);
    return running;
  });
  if ("exitCode" in started) return started.exitCode;
  if (started.value === "help") {
    console.log(HELP);
    return 0;
  }
  await started.value.finished;
  return 0;
}

/**
 * Probes the tokenizer and the upstream once. A context length the server
 * contradicts stops start-up: every budget would be computed against the
 * wrong limit. One that cannot be reached is only a warning: it may come up
 * later, and budget() estimates meanwhile.
 */
async function probe(
  { settings, backend }: Prepared,
): Promise<Omit<ReadinessProbe, "checkedAt">> {
  const [probes, upstream] = await Promise.all([
    probeLinks(settings, backend),
    probeUpstream(settings.upstream!, {
      contextLength: settings.contextLength,
      contextLengthSource: settings.contextLengthSource,
      model: settings.config.model,
      modelSource: settings.nameOf("INCONTEXT_BUDGET_MODEL"),
    }),
  ]);
  const [{ probe: tokenizer }, ...later] = probes as [
    LinkProbe,
    ...LinkProbe[],
  ];
  for (const { name, probe } of later) {
    if (probe.status === "mismatch") throw mismatched(settings, probe.mismatch);
    if (probe.status !== "failed") continue;
    logger.warn(
      "backend {name} of the chain not counting at start-up: {problem}; a model that moves to it gets the rough estimate until it counts",
      { name, problem: probe.problem },
    );
  }
  switch (tokenizer.status) {
    case "mismatch":
      throw mismatched(settings, tokenizer.mismatch);
    case "failed":
      logger.warn(
        "tokenizer not counting at start-up: {problem}; requests get the rough estimate until it counts",
        { problem: tokenizer.problem },
      );
      break;
    case "estimated":
      logger.info(
        "backend={source} counts by estimate until a response's usage anchors a conversation",
        { source: backend.source },
      );
      break;
  }
  const model = settings.config.model ??
    (upstream.reachable ? upstream.served?.model : undefined);
  const estimated = backend.estimateReason(model);
  if (estimated !== undefined) {
    logger.warn(
      "counts of {model} come from usage anchors, estimated with the fallback margin until a conversation has one: {reason}",
      { model: model ?? "the served model", reason: estimated },
    );
  }
  if (!upstream.reachable) {
    logger.warn(
      "upstream not reachable at start-up: {problem}; requests get 502 until it answers",
      { problem: upstream.problem },
    );
  } else if (upstream.problem !== undefined) {
    logger.warn("upstream at start-up: {problem}", {
      problem: upstream.problem,
    });
  }
  return {
    tokenizer: TOKENIZER_READINESS[tokenizer.status],
    upstream: upstream.reachable ? "reachable" : "unreachable",
  };
}

/** The error of a context length a server contradicts. */
function mismatched(
  settings: Prepared["settings"],
  mismatch: ContextLengthMismatchError,
): ConfigError {
  return new ConfigError([{
    variable: settings.contextLengthSource,
    rule:
      `is ${mismatch.configured} but ${mismatch.servedBy} is ${mismatch.served}: set them equal`,
  }]);
}

/** What a start-up probe's outcome means for readiness (a mismatch stops start-up). */
const TOKENIZER_READINESS = {
  exact: "reachable",
  estimated: "estimating",
  failed: "unreachable",
} as const satisfies Record<
  Exclude<TokenizerProbe["status"], "mismatch">,
  TokenizerReadiness
>;

/** How long one readiness probe answers `/incontext/readyz`, in seconds. */
const READINESS_SECONDS = 5;

interface Listening {
  readonly server: HttpServer;
  /** The store shared with other replicas, when one is configured. */
  readonly shared: SharedLayer | undefined;
  /** Aborted when the shutdown grace period is over: it ends what is still in flight. */
  readonly graceOver: AbortController;
  /** Where the start-up probe is recorded for `/incontext/readyz`. */
  readonly readiness: Readiness;
  /** The upstream's connections. */
  readonly upstreamFetch: ExactFetch;
}

async function listen(prepared: Prepared): Promise<Listening> {
  const { settings, backend, cache } = prepared;
  const { config, hermes } = settings;
  const graceOver = new AbortController();
  const shared = await openSharedLayer(prepared);
  // The start-up probe answers readiness for a few seconds; a supervisor
  // checking every second then costs one probe every few seconds, not each.
  const readiness = new Readiness({ maxAgeSeconds: READINESS_SECONDS });
  // Requests go upstream exactly as clients sent them: the runtime's fetch
  // would add headers and upper-case methods.
  const upstreamFetch = createExactFetch();
  const refusals = serverRefusals();
  const handler = createProxyHandler({
    readiness,
    fetch: upstreamFetch,
    upstream: settings.upstream!,
    window: settings.window,
    contextLength: settings.contextLength,
    backend: shared?.backend ?? backend,
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
    ...(shared === undefined ? {} : { anchors: shared.anchors }),
    reporters: [refusals.reporter, chainMoves(backend), shared?.reporter]
      .filter((reporter) => reporter !== undefined),
    ...(config.model === undefined ? {} : { route: { model: config.model } }),
    ...(hermes === undefined ? {} : hermesLive(hermes, config)),
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
  try {
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
      maxHeaderBytes: config.maxHeaderBytes,
      onRefused: refusals.refused,
    });
    return { server, graceOver, shared, readiness, upstreamFetch };
  } catch (error) {
    await upstreamFetch[Symbol.asyncDispose]();
    await shared?.[Symbol.asyncDispose]();
    throw new ConfigError([{
      variable: settings.nameOf("INCONTEXT_LISTEN"),
      rule: `cannot listen on ${config.listen}: ${listenProblem(error)}`,
    }], { cause: error });
  }
}

function announce(
  { settings, backend }: Prepared,
  { hostname, port }: HttpServer,
): void {
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  const { config } = settings;
  logger.info(
    "incontext proxy listening on {listen}: upstream={upstream} tokenizer={tokenizer} backend={backend} window={window} ({windowSource}) context_length={contextLength} ({contextLengthSource})",
    {
      listen: `http://${host}:${port}`,
      upstream: publicUrl(settings.upstream!),
      // The path is kept: a wrong one (/v1/tokenize) must be seen.
      tokenizer: config.tokenizerUrl !== undefined
        ? publicUrl(config.tokenizerUrl)
        : config.tokenizerDir ?? "none",
      backend: backend.source,
      window: settings.window,
      windowSource: settings.windowSource,
      contextLength: settings.contextLength,
      contextLengthSource: settings.contextLengthSource,
    },
  );
}

interface Running {
  /** Settles once the server has stopped and the cache is disposed. */
  readonly finished: Promise<void>;
  /** Stops the server: what a signal does, without its log line. */
  stop(): Promise<void>;
}

function stopOnSignals(
  { prepared, server, graceOver, shared, upstreamFetch }: Listening & {
    prepared: Prepared;
  },
): Running {
  const grace = prepared.settings.config.shutdownGraceSeconds;
  let stopped: Promise<void> | undefined;
  let markFinished = () => {};
  const finished = new Promise<void>((resolve) => markFinished = resolve);
  const removeListeners = onStopSignals((signal) => {
    if (stopped === undefined) {
      logger.info("stopping: finishing requests in flight ({signal})", {
        signal,
      });
    }
    void stop();
  });
  // The server stops only through stop(): on a signal, or when start-up fails.
  function stop(): Promise<void> {
    stopped ??= (async () => {
      // close() waits for every connection to end; after the grace period
      // the proxy's signal ends every exchange still running, and what
      // remains (a client that never reads its error) is closed.
      const timer = setTimeout(() => {
        logger.warn(
          "grace period of {seconds} s over: ending requests in flight",
          { seconds: grace },
        );
        graceOver.abort();
        server.closeAll();
      }, grace * 1000);
      await server.close();
      clearTimeout(timer);
      await upstreamFetch[Symbol.asyncDispose]();
      removeListeners();
      await shared?.[Symbol.asyncDispose]();
      await prepared[Symbol.asyncDispose]();
      markFinished();
    })();
    return stopped;
  }
  return { finished, stop };
}
