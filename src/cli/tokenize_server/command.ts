/**
 * `incontext tokenize-server`: vLLM's `POST /tokenize` and `POST /detokenize`
 * answered from a model folder, for when the inference endpoint hides its own
 * /tokenize (a hosted vLLM behind a gateway). Point the vllm backend's
 * `INCONTEXT_TOKENIZER_URL` at `http://HOST:PORT/tokenize`.
 *
 * @module
 */
import { createCountCache } from "../../cache/mod.ts";
import { LocalBackend } from "../../backends/local/mod.ts";
import { configured, reportConfigIssues } from "../config_failure.ts";
import { listenProblem } from "../listen_problem.ts";
import { untilStopSignal } from "../stop_signals.ts";
import { configureConsoleLog, logSettings } from "../console_log.ts";
import { createTokenizeHandler } from "./handler.ts";
import {
  connectionBounds,
  type HttpServer,
  processLimits,
  startHttpServer,
} from "../../server/http_server.ts";
import {
  resolveTokenizeServerSettings,
  TOKENIZE_HELP,
  type TokenizeServerSettings,
} from "./settings.ts";

const COMMAND = "incontext tokenize-server";

/**
 * Runs the tokenize server until SIGTERM, SIGINT or SIGHUP, which let the
 * requests in flight finish.
 *
 * @param args The command's arguments, after `tokenize-server`.
 * @param env The environment.
 * @returns The process exit code: 0 after a clean stop, 2 for a bad setting.
 */
export async function tokenizeServerCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  await configureConsoleLog(logSettings(env));
  const resolved = await configured(
    COMMAND,
    () => resolveTokenizeServerSettings(args, env),
  );
  if ("exitCode" in resolved) return resolved.exitCode;
  const settings = resolved.value;
  if (settings === "help") {
    console.log(TOKENIZE_HELP);
    return 0;
  }
  // The model loads, renders and tokenizes in the cache's worker: a long
  // prompt never holds up this thread's other requests.
  const cache = createCountCache();
  const backend = new LocalBackend({
    dir: settings.modelDir,
    cache,
    tokenizerMode: settings.tokenizerMode,
    ...(settings.chatTemplate === undefined
      ? {}
      : { chatTemplate: settings.chatTemplate }),
    ...(settings.defaultChatTemplateKwargs === undefined
      ? {}
      : { defaultChatTemplateKwargs: settings.defaultChatTemplateKwargs }),
  });
  try {
    return await serveTokenizer(settings, backend);
  } finally {
    await backend[Symbol.asyncDispose]();
    await cache[Symbol.asyncDispose]();
  }
}

async function serveTokenizer(
  settings: TokenizeServerSettings,
  backend: LocalBackend,
): Promise<number> {
  // Load the files now: a bad folder fails start-up, not the first request.
  try {
    await backend.load();
  } catch (error) {
    return reportConfigIssues(COMMAND, [{
      variable: "--model-dir (INCONTEXT_TOKENIZER_DIR)",
      rule: `cannot be loaded: ${
        error instanceof Error ? error.message : typeof error
      }`,
    }]);
  }
  const { limits } = settings;
  const handler = createTokenizeHandler({
    backend,
    maxModelLen: settings.maxModelLen,
    trustRequestChatTemplate: settings.trustRequestChatTemplate,
    maxRequestBytes: limits.maxRequestBytes,
  });
  // The proxy's own server: it bounds the head, the time to send a request,
  // idle connections and the connections open at once.
  const requestTimeoutMs = limits.requestTimeoutSeconds * 1000;
  const { maxConnections, backlog } = connectionBounds(
    limits.maxConnections,
    processLimits(),
  );
  let server: HttpServer;
  try {
    server = await startHttpServer(handler, {
      hostname: settings.hostname,
      port: settings.port,
      headersTimeoutMs: Math.min(
        limits.headersTimeoutSeconds * 1000,
        requestTimeoutMs,
      ),
      requestTimeoutMs,
      keepAliveTimeoutMs: limits.keepAliveTimeoutSeconds * 1000,
      maxConnections,
      backlog,
      maxHeaderBytes: limits.maxHeaderBytes,
    });
  } catch (error) {
    return reportConfigIssues(COMMAND, [{
      variable: "--listen",
      rule: `cannot listen on ${settings.hostname}:${settings.port}: ${
        listenProblem(error)
      }`,
    }]);
  }
  const stopped = untilStopSignal(() => server.close());
  const host = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  console.log(
    `incontext tokenize server listening on http://${host}:${server.port}: max_model_len=${settings.maxModelLen}`,
  );
  await stopped;
  return 0;
}
