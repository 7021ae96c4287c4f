/**
 * `incontext demo-upstream`: the fake vLLM upstream of `./testing` as a
 * process on a fixed port, so that the proxy can be tried without a model
 * server. It speaks vLLM's protocol in shape and counts by the fake's rule
 * (one token per 4 characters of JSON), not with a tokenizer. It keeps no
 * request, and runs behind the proxy's own bounded HTTP server.
 *
 * This is the one product file that imports `src/testing/`: the command
 * line loads it only when this command runs.
 *
 * @module
 */
import { createFakeUpstreamHandler } from "../../testing/fake_upstream.ts";
import { readLimited } from "../../_internal/limited_read.ts";
import { configured, reportConfigIssues } from "../config_failure.ts";
import { listenProblem } from "../listen_problem.ts";
import { untilStopSignal } from "../stop_signals.ts";
import {
  connectionBounds,
  type HttpServer,
  processLimits,
  startHttpServer,
} from "../../server/http_server.ts";
import {
  DEMO_HELP,
  type DemoUpstreamSettings,
  resolveDemoUpstreamSettings,
} from "./settings.ts";

const COMMAND = "incontext demo-upstream";

/**
 * Runs the demo upstream until SIGTERM, SIGINT or SIGHUP.
 *
 * @param args The command's arguments, after `demo-upstream`.
 * @param env The environment.
 * @returns The process exit code: 0 after a clean stop, 2 for a bad setting
 * or an address it cannot listen on.
 */
export async function demoUpstreamCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const resolved = await configured(
    COMMAND,
    () => resolveDemoUpstreamSettings(args, env),
  );
  if ("exitCode" in resolved) return resolved.exitCode;
  const settings = resolved.value;
  if (settings === "help") {
    console.log(DEMO_HELP);
    return 0;
  }
  // Ends streams in progress when the server closes.
  const closing = new AbortController();
  const fake = createFakeUpstreamHandler({
    model: settings.model,
    maxModelLen: settings.maxModelLen,
    ...(settings.toolCallEvery === undefined
      ? {}
      : { toolCallEvery: settings.toolCallEvery }),
    recordRequests: false,
    signal: closing.signal,
  });
  const handler = bounded(fake.handler, settings.limits.maxRequestBytes);
  let server: HttpServer;
  try {
    server = await listen(handler, settings);
  } catch (error) {
    return reportConfigIssues(COMMAND, [{
      variable: "--listen",
      rule: `cannot listen on ${settings.hostname}:${settings.port}: ${
        listenProblem(error)
      }`,
    }]);
  }
  const stopped = untilStopSignal(async () => {
    closing.abort();
    await server.close();
  });
  announce(server, settings);
  await stopped;
  return 0;
}

/** The fake's handler behind a body limit: a larger body gets vLLM's 413 unread. */
function bounded(
  handler: (request: Request) => Promise<Response>,
  maxBytes: number,
): (request: Request) => Promise<Response> {
  const tooLarge = () =>
    Response.json({
      error: {
        message: `The request body is larger than ${maxBytes} bytes`,
        type: "RequestEntityTooLarge",
        param: null,
        code: 413,
      },
    }, { status: 413 });
  return async (request) => {
    if (Number(request.headers.get("content-length")) > maxBytes) {
      await request.body?.cancel();
      return tooLarge();
    }
    const bytes = await readLimited(request.body, maxBytes);
    if (bytes === undefined) return tooLarge();
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    return await handler(
      new Request(request.url, {
        method: request.method,
        headers: request.headers,
        ...(hasBody ? { body: bytes } : {}),
      }),
    );
  };
}

async function listen(
  handler: (request: Request) => Promise<Response>,
  { hostname, port, limits }: DemoUpstreamSettings,
): Promise<HttpServer> {
  const requestTimeoutMs = limits.requestTimeoutSeconds * 1000;
  const { maxConnections, backlog } = connectionBounds(
    limits.maxConnections,
    processLimits(),
  );
  return await startHttpServer(handler, {
    hostname,
    port,
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
}

function announce(server: HttpServer, settings: DemoUpstreamSettings): void {
  const host = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  const root = `http://${host}:${server.port}`;
  console.log(
    `incontext demo upstream listening on ${root}: model=${settings.model} max_model_len=${settings.maxModelLen}`,
  );
  console.log(
    'It is a stand-in for vLLM: it counts one token per 4 characters of JSON and replies "Noted: N messages.".',
  );
  if (settings.toolCallEvery !== undefined) {
    console.log(
      `Every ${settings.toolCallEvery} user turns, a request that offers tools gets a call of its first tool.`,
    );
  }
  console.log(
    `Put the proxy in front of it: INCONTEXT_TOKENIZER_URL=${root}/tokenize, --upstream ${root} (README: "Try the proxy").`,
  );
}
