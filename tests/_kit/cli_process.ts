/**
 * The `incontext` command as a child process, the way a user starts it:
 * `deno run -A src/cli/mod.ts COMMAND ...` with a clean environment.
 */
export const CLI = new URL("../../src/cli/mod.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** A port that was free a moment ago. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Options for {@linkcode runCli} and {@linkcode spawnCli}. */
export interface CliOptions {
  /** The whole environment of the child (besides NO_COLOR and PATH). */
  readonly env?: Record<string, string>;
  /** Written to the child's standard input, which is then closed. */
  readonly stdin?: string;
}

/** What a finished command printed, and its exit code. */
export interface CliOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function command(args: readonly string[], options: CliOptions) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", CONFIG, CLI, ...args],
    env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "", ...options.env },
    clearEnv: true,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs one command to its end. */
export async function runCli(
  args: readonly string[],
  options: CliOptions = {},
): Promise<CliOutput> {
  const child = command(args, options).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const { code, stdout, stderr } = await child.output();
  const decoder = new TextDecoder();
  return {
    code,
    stdout: decoder.decode(stdout),
    stderr: decoder.decode(stderr),
  };
}

/** Output that grows while the child runs, with a wait for a pattern. */
export interface Collected {
  readonly done: Promise<void>;
  readonly text: string;
  /** Resolves once `pattern` appears, or the stream ends. */
  waitFor(pattern: RegExp): Promise<string>;
}

/** Collects a child's output as it arrives, so the child never blocks on a full pipe. */
export function collect(stream: ReadableStream<Uint8Array>): Collected {
  let text = "";
  let ended = false;
  const waiters: (() => void)[] = [];
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      waiters.splice(0).forEach((wake) => wake());
    }
    ended = true;
    waiters.splice(0).forEach((wake) => wake());
  })();
  return {
    done,
    get text() {
      return text;
    },
    async waitFor(pattern: RegExp): Promise<string> {
      while (!pattern.test(text) && !ended) {
        await new Promise<void>((wake) => waiters.push(wake));
      }
      return text;
    },
  };
}

/** A running command with its output collected. */
export interface RunningCli extends AsyncDisposable {
  readonly child: Deno.ChildProcess;
  readonly stdout: Collected;
  readonly stderr: Collected;
}

/** Starts a long-running command; disposing it sends SIGKILL if it still runs. */
export function spawnCli(
  args: readonly string[],
  options: CliOptions = {},
): RunningCli {
  const child = command(args, options).spawn();
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  return {
    child,
    stdout,
    stderr,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
      await Promise.all([stdout.done, stderr.done]);
    },
  };
}

/** True when the text holds what an uncaught error prints. */
export function hasStackTrace(text: string): boolean {
  return /Uncaught|^\s+at .*:\d+:\d+\)?$/m.test(text);
}

/** Reads `reader` until `pattern` appears in what it gave (or it ends); returns that text. */
export async function readUntil(
  reader: ReadableStreamDefaultReader<string>,
  pattern: RegExp,
): Promise<string> {
  let text = "";
  while (!pattern.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  return text;
}
