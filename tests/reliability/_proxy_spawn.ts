/**
 * The real proxy server (examples/server.ts) as a child process: its output
 * collected as it arrives, its resident memory sampled from /proc, and a
 * disposal that always reaps it.
 */

import { HANG_MS } from "../_kit/hang.ts";

const SERVER = new URL("../../examples/server.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** A free local port: the server's --listen refuses port 0. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A child's output, collected as it arrives so the child never blocks on a full pipe. */
export interface Output {
  readonly done: Promise<void>;
  readonly text: string;
  /** Resolves once `pattern` appears or the stream ends, or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<boolean>;
}

function collect(stream: ReadableStream<Uint8Array>): Output {
  let text = "";
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      wake();
    }
  })().finally(() => {
    ended = true;
    wake();
  });
  return {
    done,
    get text() {
      return text;
    },
    async waitFor(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(text) && !ended && Date.now() < deadline) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          const w = () => resolve();
          waiters.add(w);
          timer = setTimeout(() => {
            waiters.delete(w);
            resolve();
          }, Math.max(1, deadline - Date.now()));
        }).finally(() => clearTimeout(timer));
      }
      return pattern.test(text);
    },
  };
}

/** The proxy server running as a child process. */
export interface SpawnedProxy extends AsyncDisposable {
  readonly child: Deno.ChildProcess;
  readonly url: string;
  readonly port: number;
  readonly stdout: Output;
  readonly stderr: Output;
  /** The child's resident set size in bytes (0 once it has exited). */
  rss(): Promise<number>;
}

/** How to start the server beyond its environment. */
export interface SpawnOptions {
  /** The server process's open-file limit (`ulimit -n`), set through `sh`. */
  readonly openFiles?: number;
}

/** Starts examples/server.ts in front of `upstream`; resolves once it listens. */
export async function spawnProxy(
  upstream: string,
  env: Record<string, string>,
  options: SpawnOptions = {},
): Promise<SpawnedProxy> {
  const port = freePort();
  const limited = options.openFiles !== undefined;
  const child = new Deno.Command(limited ? "/bin/sh" : Deno.execPath(), {
    args: [
      ...(limited
        ? [
          "-c",
          `ulimit -n ${options.openFiles} && exec "$0" "$@"`,
          Deno.execPath(),
        ]
        : []),
      "run",
      "-A",
      "--config",
      CONFIG,
      SERVER,
      "--upstream",
      upstream,
      "--listen",
      `127.0.0.1:${port}`,
    ],
    env: {
      NO_COLOR: "1",
      INCONTEXT_CONTEXT_LENGTH: "65536",
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const reap = async () => {
    if (!exited) {
      try {
        child.kill("SIGKILL");
      } catch {
        // It exited between the check and the kill.
      }
    }
    await status;
    await stdout.done;
    await stderr.done;
  };
  if (!await stdout.waitFor(/listening on/, HANG_MS)) {
    await reap();
    throw new Error(`The proxy did not start: ${stderr.text}`);
  }
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    port,
    stdout,
    stderr,
    async rss() {
      return (await processMemory(child.pid)).rss;
    },
    [Symbol.asyncDispose]: reap,
  };
}

/** A process's resident memory, in bytes (0 once it has exited). */
export interface ProcessMemory {
  /** Resident now (`VmRSS`). */
  readonly rss: number;
  /** The most resident since start, or since {@linkcode resetMemoryPeak} (`VmHWM`). */
  readonly peak: number;
}

/**
 * Runs a line of Node on `/proc/<pid>`: Deno reads /proc/<pid> only with
 * --allow-all, which tests lack, and ps is not on every machine; Node is,
 * wherever the suite runs.
 */
async function onProc(pid: number, script: string): Promise<string> {
  const { success, stdout } = await new Deno.Command("node", {
    args: ["-e", script, String(pid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  // An exited process has no /proc entry: it has no memory either.
  return success ? new TextDecoder().decode(stdout) : "";
}

/** The resident memory of process `pid`, from `/proc/<pid>/status`. */
export async function processMemory(pid: number): Promise<ProcessMemory> {
  const status = await onProc(
    pid,
    `process.stdout.write(require("node:fs").readFileSync("/proc/" + process.argv[1] + "/status", "utf8"))`,
  );
  const kb = (field: string) => {
    const found = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
    return found === null ? 0 : Number(found[1]) * 1024;
  };
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/** Sets the peak of process `pid` to its resident memory now (Linux's `clear_refs`). */
export async function resetMemoryPeak(pid: number): Promise<void> {
  const done = await onProc(
    pid,
    `require("node:fs").writeFileSync("/proc/" + process.argv[1] + "/clear_refs", "5"); process.stdout.write("reset")`,
  );
  if (done !== "reset") {
    throw new Error(
      `Cannot reset the memory peak of process ${pid}: /proc/${pid}/clear_refs is not writable (Linux 4.0 or later needed)`,
    );
  }
}

/** RSS samples of a spawned proxy, taken until stopped. */
export interface RssSampler {
  /** The samples so far, in bytes, the first taken before sampling began. */
  readonly samples: number[];
  /** Stops sampling; resolves once the last sample is in. */
  stop(): Promise<void>;
}

/** Samples `proxy`'s resident set size every `everyMs` until stopped. */
export async function sampleRss(
  proxy: Pick<SpawnedProxy, "rss">,
  everyMs = 250,
): Promise<RssSampler> {
  const samples = [await proxy.rss()];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push(await proxy.rss());
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    samples,
    stop: async () => {
      sampling = false;
      await sampler;
    },
  };
}
