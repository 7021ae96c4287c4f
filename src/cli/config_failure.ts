/**
 * The one way the command line reports a bad setting: one line per issue on
 * standard error, a pointer to `--help`, and exit code 2. Never a stack
 * trace, never a value (a setting may hold a secret).
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from "../core/config_error.ts";

/** The exit code of every configuration error. */
export const CONFIG_EXIT_CODE = 2;

/**
 * Prints every issue of a configuration error, one line each.
 *
 * @param command What failed to start, e.g. `incontext serve`.
 * @param issues The broken rules.
 * @returns {@linkcode CONFIG_EXIT_CODE}.
 */
export function reportConfigIssues(
  command: string,
  issues: readonly ConfigIssue[],
): number {
  console.error(`${command}: invalid configuration`);
  for (const issue of issues) {
    console.error(`  ${issue.variable} ${issue.rule}`);
  }
  console.error("Run with --help for every flag and variable.");
  return CONFIG_EXIT_CODE;
}

/**
 * Runs a start-up step and turns a {@linkcode ConfigError} into its report.
 *
 * @param command What is starting, for the report's first line.
 * @param step The step; its other errors propagate.
 * @returns The step's value, or the exit code when the configuration is bad.
 */
export async function configured<T>(
  command: string,
  step: () => T | Promise<T>,
): Promise<{ value: T } | { exitCode: number }> {
  try {
    return { value: await step() };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { exitCode: reportConfigIssues(command, error.issues) };
  }
}
