/**
 * Subprocesses for `prove.ts`: each runs in its own process group with a
 * timeout, and a failure becomes a readable {@linkcode StepError}.
 *
 * @module
 */

/** One minute, in milliseconds. */
export const MINUTE = 60_000;

/** How a command ended; the output is empty when it was shown instead. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

/** Where a command runs and how long it may take. */
export interface RunOptions {
  readonly cwd: string | URL;
  readonly timeoutMs: number;
  /** Show the output as it comes instead of capturing it. */
  readonly echo?: boolean;
}

/** A step that failed with a message worth showing on its own. */
export class StepError extends Error {
  override name = "StepError";
}

/** Process group ids still running, for an interrupt to end. */
export const running = new Set<number>();

/**
 * Runs a command in its own process group, so that a timeout (or Ctrl-C)
 * ends it with every process it started, such as the test files that
 * `node --test` spawns.
 */
export async function run(
  command: string,
  args: string[],
  options: RunOptions,
): Promise<RunResult> {
  const output = options.echo ? "inherit" : "piped";
  const child = new Deno.Command(command, {
    args,
    cwd: options.cwd,
    detached: true,
    stdin: "null",
    stdout: output,
    stderr: output,
  }).spawn();
  running.add(child.pid);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, options.timeoutMs);
  try {
    const result = await child.output();
    const decoder = new TextDecoder();
    return {
      code: result.code,
      stdout: options.echo ? "" : decoder.decode(result.stdout),
      stderr: options.echo ? "" : decoder.decode(result.stderr),
      timedOut,
    };
  } finally {
    clearTimeout(timer);
    running.delete(child.pid);
  }
}

export function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // The group has already exited.
  }
}

/** Runs a command and throws a readable error unless it exits with 0. */
export async function mustRun(
  command: string,
  args: string[],
  options: RunOptions,
): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.timedOut) {
    throw new StepError(
      `'${command} ${args.join(" ")}' did not finish within ${
        options.timeoutMs / 1000
      } s and was killed`,
    );
  }
  if (result.code !== 0) {
    const output = `${result.stdout}${result.stderr}`.trim().slice(-4000);
    throw new StepError(
      `'${command} ${args.join(" ")}' exited with code ${result.code}${
        output ? `:\n${output}` : ""
      }`,
    );
  }
  return result;
}
