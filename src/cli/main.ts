/**
 * The `incontext` command: picks the subcommand, each in its own folder.
 *
 * @module
 */
import { VERSION } from "../core/version.ts";
import { reportConfigIssues } from "./config_failure.ts";
import { suggestion } from "./suggestion.ts";
import { checkCommand } from "./check/command.ts";
import { countCommand } from "./count/command.ts";
import { serveCommand } from "./serve/command.ts";
import { tokenizeServerCommand } from "./tokenize_server/command.ts";

/** The subcommands, each a function from its arguments to an exit code. */
const COMMANDS: Record<
  string,
  (
    args: readonly string[],
    env: Record<string, string | undefined>,
  ) => Promise<number>
> = {
  serve: serveCommand,
  "tokenize-server": tokenizeServerCommand,
  check: checkCommand,
  count: countCommand,
  // Loaded only when it runs: it serves a fake from src/testing/.
  "demo-upstream": async (args, env) =>
    (await import("./demo_upstream/command.ts")).demoUpstreamCommand(args, env),
};

/** The top-level help. */
export const MAIN_HELP =
  `incontext ${VERSION}: exact output budgets for LLM agents

Usage:
  incontext serve [flags]            the budgeting proxy in front of an OpenAI-compatible server
  incontext tokenize-server [flags]  vLLM's /tokenize and /detokenize from a model folder
  incontext check [flags]            probe the tokenizer and the upstream; exit 0 when budgeting is exact
  incontext count [--file PATH]      count one request (JSON from PATH or stdin) and print the decision
  incontext demo-upstream [flags]    a stand-in for vLLM on 127.0.0.1:8000, to try the proxy without one
  incontext help | --help            this help
  incontext version | --version      the version

Run \`incontext COMMAND --help\` for a command's flags and variables.`;

/**
 * Runs one `incontext` command line.
 *
 * @param args The arguments after the program name.
 * @param env The environment.
 * @returns The exit code: 0 success, 1 a failure at run time, 2 bad usage or
 * configuration.
 */
export async function runCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === "help" || command === "--help") {
    console.log(MAIN_HELP);
    return command === undefined ? 2 : 0;
  }
  if (command === "version" || command === "--version") {
    console.log(`incontext ${VERSION}`);
    return 0;
  }
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (run === undefined) {
    return reportConfigIssues("incontext", [{
      variable: "command line",
      rule: `has an unknown command${
        suggestion(command, Object.keys(COMMANDS))
      }; use one of: ${Object.keys(COMMANDS).join(", ")}`,
    }]);
  }
  return await run(rest, env);
}
