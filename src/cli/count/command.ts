/**
 * `incontext count`: reads one request body as JSON from a file or standard
 * input and prints what the proxy would do with it: the prompt tokens and
 * where they came from, the budget, and the decision. Nothing is sent
 * upstream.
 *
 * @module
 */
import { budget } from "../../core/budget.ts";
import { isJsonObject } from "../../core/request.ts";
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
backend and prints the prompt tokens, the budget and the decision (--json: as
one JSON object). The upstream is not contacted; the flags and variables are
those of \`incontext serve --help\`.`;

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

/** Reads the request, budgets it, prints the decision; returns the exit code. */
async function decide(ready: Prepared, own: OwnFlags): Promise<number> {
  const request = await readRequest(own.file);
  if (typeof request === "string") {
    console.error(`${COMMAND}: ${request}`);
    return 1;
  }
  const { settings, backend } = ready;
  const { config } = settings;
  const result = await budget(request, {
    window: settings.window,
    contextLength: settings.contextLength,
    backend,
    fallbackMarginTokens: config.fallbackMarginTokens,
    minOutputTokens: config.minOutputTokens,
    ...(config.model === undefined ? {} : { route: { model: config.model } }),
  });
  const { request: _request, ...decision } = result;
  if (own.json) {
    console.log(JSON.stringify({ window: settings.window, ...decision }));
    return 0;
  }
  console.log([
    `prompt tokens: ${decision.promptTokens ?? "-"} (${decision.source})`,
    `window:        ${settings.window} (${settings.windowSource})`,
    `decision:      ${decision.action}${
      decision.maxTokens === undefined
        ? ""
        : ` ${decision.field ?? "max_tokens"}=${decision.maxTokens}`
    }`,
    `reason:        ${decision.reason}`,
  ].join("\n"));
  return 0;
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

/** The request object, or why there is none (never quoting the input). */
async function readRequest(
  file: string | undefined,
): Promise<Record<string, unknown> | string> {
  let text: string;
  try {
    text = file === undefined
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(file);
  } catch (error) {
    return `cannot read ${file ?? "standard input"} (${
      error instanceof Error ? error.name : typeof error
    })`;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return "the input is not valid JSON";
  }
  return isJsonObject(parsed) ? parsed : "the input is not a JSON object";
}
