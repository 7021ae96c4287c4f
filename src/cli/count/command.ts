/**
 * `incontext count`: reads one request body as JSON from a file or standard
 * input and prints what the proxy would do with it: the prompt tokens and
 * where they came from, the budget, and the decision. Nothing is sent
 * upstream.
 *
 * @module
 */
import { decide as decideBody } from "../../bridges/decision.ts";
import { detectKind } from "../../core/kind.ts";
import { isJsonObject, type JsonObject } from "../../core/request.ts";
import { configured, reportConfigIssues } from "../config_failure.ts";
import { configureConsoleLog, logSettings } from "../console_log.ts";
import { prepare, type Prepared } from "../setup/prepare.ts";

const COMMAND = "incontext count";

export const COUNT_HELP =
  `incontext count: what the proxy would do with one request

Usage:
  incontext count [--file PATH] [--json] [flags of incontext serve]

Reads a chat completions, completions or Responses request body as JSON from
PATH, or from standard input without --file, counts it with the configured
backend and prints the prompt tokens, the decision and exactly what the proxy
would send (the cap it writes) or answer (its 400 when the window is full),
under INCONTEXT_ON_EXHAUSTED (--json: as one JSON object). The upstream is not
contacted; the flags and variables are those of \`incontext serve --help\`.`;

/**
 * Counts one request and prints the decision.
 *
 * @param args The command's arguments, after `count`.
 * @param env The environment.
 * @returns 0 when the request was counted (whatever the decision), 1 when the
 * input is not a JSON object, 2 for a bad setting.
 */
export async function countCommand(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const own = ownFlags(args);
  if (own.help) {
    console.log(COUNT_HELP);
    return 0;
  }
  if (own.error !== undefined) {
    return reportConfigIssues(COMMAND, [{
      variable: "command line",
      rule: own.error,
    }]);
  }
  await configureConsoleLog(logSettings(env));
  const prepared = await configured(
    COMMAND,
    () => prepare(own.rest, env, { requireUpstream: false }),
  );
  if ("exitCode" in prepared) return prepared.exitCode;
  if (prepared.value === "help") {
    console.log(COUNT_HELP);
    return 0;
  }
  const ready = prepared.value;
  try {
    return await decide(ready, own);
  } finally {
    await ready[Symbol.asyncDispose]();
  }
}

/** Reads the request, decides as the proxy would, prints it; returns the exit code. */
async function decide(ready: Prepared, own: OwnFlags): Promise<number> {
  const input = await readRequest(own.file);
  if (typeof input === "string") {
    console.error(`${COMMAND}: ${input}`);
    return 1;
  }
  const { settings, backend } = ready;
  const { config, hermes } = settings;
  // The proxy's own decision, policy included: what it would send or answer.
  const decision = await decideBody(input.bytes, {
    kind: detectKind(input.request) ?? "chat",
    bridge: {
      window: settings.window,
      contextLength: settings.contextLength,
      backend,
      fallbackMarginTokens: config.fallbackMarginTokens,
      minOutputTokens: config.minOutputTokens,
      onExhausted: config.onExhausted,
      ...(config.model === undefined ? {} : { route: { model: config.model } }),
      ...(hermes?.routes === undefined ? {} : { routes: hermes.routes }),
    },
  });
  if (decision.kind === "malformed") {
    console.error(`${COMMAND}: ${decision.reason}`);
    return 1;
  }
  const { request: _request, ...result } = decision.result;
  const answer = decision.kind === "reject"
    ? await decision.response.json() as { error: { message: string } }
    : undefined;
  const sent = decision.kind === "send" ? decision.maxTokens : undefined;
  if (own.json) {
    console.log(JSON.stringify({
      window: settings.window,
      ...result,
      ...(sent === undefined ? {} : { sentMaxTokens: sent }),
      ...(answer === undefined ? {} : { answer: { status: 400, ...answer } }),
    }));
    return 0;
  }
  console.log([
    `prompt tokens: ${result.promptTokens ?? "-"} (${result.source})`,
    `window:        ${settings.window} (${settings.windowSource})`,
    `decision:      ${result.action}${outcome(result, decision.kind, sent)}`,
    ...(answer === undefined ? [] : [`answer:        ${answer.error.message}`]),
    `reason:        ${result.reason}`,
  ].join("\n"));
  return 0;
}

/** What is sent or answered, after the action. */
function outcome(
  result: { readonly action: string; readonly field?: string },
  kind: "send" | "reject",
  sent: number | undefined,
): string {
  if (kind === "reject") {
    return " (answered 400 context_length_exceeded, upstream not called)";
  }
  if (sent !== undefined) return ` ${result.field ?? "max_tokens"}=${sent}`;
  return result.action === "compress" ? " (sent as it came)" : "";
}

interface OwnFlags {
  readonly file?: string;
  readonly json: boolean;
  readonly help: boolean;
  readonly rest: readonly string[];
  readonly error?: string;
}

/** Takes `--file`, `--json` and `--help` out; the rest are `serve`'s flags. */
function ownFlags(args: readonly string[]): OwnFlags {
  const rest: string[] = [];
  let file: string | undefined;
  let json = false;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--json") json = true;
    else if (arg === "--help") help = true;
    else if (arg.startsWith("--file=")) file = arg.slice("--file=".length);
    else if (arg === "--file") {
      file = args[++i];
      if (file === undefined) {
        return { json, help, rest, error: "--file needs a PATH" };
      }
    } else rest.push(arg);
  }
  return { ...(file === undefined ? {} : { file }), json, help, rest };
}

/** The request's bytes and object, or why there is none (never quoting the input). */
async function readRequest(
  file: string | undefined,
): Promise<{ bytes: Uint8Array; request: JsonObject } | string> {
  let bytes: Uint8Array;
  try {
    bytes = file === undefined
      ? await new Response(Deno.stdin.readable).bytes()
      : await Deno.readFile(file);
  } catch (error) {
    return `cannot read ${file ?? "standard input"} (${
      error instanceof Error ? error.name : typeof error
    })`;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return "the input is not valid JSON";
  }
  return isJsonObject(parsed)
    ? { bytes, request: parsed }
    : "the input is not a JSON object";
}
