/**
 * The servers of the separate-process benchmarks, each its own process: the
 * fake vLLM upstream, the project's tokenize server over the Qwen3 files,
 * `incontext serve` with a chosen backend, and the Portkey gateway. Each is
 * started on a free port and awaited until it answers; disposing stops it
 * with SIGTERM.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { MODEL_FILES } from "../tests/_kit/model_files.ts";

const CLI = new URL("../src/cli/mod.ts", import.meta.url).pathname;
const CONFIG = new URL("../deno.json", import.meta.url).pathname;
/** The tests' and benchmarks' configuration: the peer gateway is imported there only. */
const TEST_CONFIG = new URL("../tests/deno.json", import.meta.url).pathname;

/**
 * The context length and window every benchmark server is given: Hermes at
 * 256k, or `BENCH_CONTEXT_LENGTH` tokens (with a window of three quarters of
 * it), for conversations longer than that.
 */
export const CONTEXT_LENGTH = Number(
  Deno.env.get("BENCH_CONTEXT_LENGTH") ?? 262144,
);
export const WINDOW: number = CONTEXT_LENGTH * 3 / 4;

/** The Qwen3 model folder the local backend and the tokenize server load. */
export const QWEN3_DIR: string = dirname(
  MODEL_FILES.find((files) => files.family === "qwen3")!.tokenizerPath,
);

/** A server process. */
export interface ServerProcess extends AsyncDisposable {
  /** Its root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly pid: number;
}

/** A port that was free a moment ago. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function spawn(
  args: readonly string[],
  { env = {}, url, probe, onLine }: {
    readonly env?: Record<string, string>;
    readonly url: string;
    /** A path that answers once the server is up. */
    readonly probe: string;
    /** Receives each line of standard output; without it, the output is dropped. */
    readonly onLine?: (line: string) => void;
  },
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: onLine === undefined ? "null" : "piped",
    stderr: "inherit",
  }).spawn();
  if (onLine !== undefined) void readLines(child.stdout, onLine);
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // Already gone.
    }
    await child.status;
  };
  for (let i = 0;; i++) {
    try {
      const response = await fetch(`${url}${probe}`);
      await response.body?.cancel();
      break;
    } catch (error) {
      if (i > 600) {
        await stop();
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { url, pid: child.pid, [Symbol.asyncDispose]: stop };
}

async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    lines.forEach(onLine);
  }
}

/**
 * The fake vLLM upstream; with `usageFromBench`, its `usage` reports the
 * counts the benchmark posts and its replies follow `replyTo()` (see
 * `_bench_upstream_rules.ts`).
 */
export async function startUpstream(
  { usageFromBench = false }: { readonly usageFromBench?: boolean } = {},
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--config",
      CONFIG,
      new URL("./_bench_upstream.ts", import.meta.url).pathname,
      String(CONTEXT_LENGTH),
      ...(usageFromBench ? ["--usage-from-bench"] : []),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the upstream exited before it listened");
    text += value;
  }
  // Drain the rest so the child never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done);
  })();
  return {
    url: text.trim().split(" ")[1]!,
    pid: child.pid,
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** `incontext tokenize-server` over the Qwen3 files. */
export function startTokenizeServer(): Promise<ServerProcess> {
  const port = freePort();
  return spawn([
    "run",
    "-A",
    "--config",
    CONFIG,
    CLI,
    "tokenize-server",
    "--model-dir",
    QWEN3_DIR,
    "--max-model-len",
    String(CONTEXT_LENGTH),
    "--listen",
    `127.0.0.1:${port}`,
  ], { url: `http://127.0.0.1:${port}`, probe: "/health" });
}

/** `incontext serve` in front of `upstream`, with the given backend's variables. */
export function startProxy(
  upstream: string,
  backendEnv: Record<string, string>,
  options: {
    /** Flags for Deno itself, such as `--cpu-prof`. */
    readonly denoArgs?: readonly string[];
    /** Receives each line the proxy logs to standard output. */
    readonly onLine?: (line: string) => void;
    /**
     * Another checkout of the project whose `incontext serve` runs instead
     * of this one's, with its own `deno.json`: to compare two versions.
     */
    readonly root?: string;
  } = {},
): Promise<ServerProcess> {
  const extraDenoArgs = options.denoArgs ?? [];
  const port = freePort();
  return spawn([
    "run",
    "-A",
    ...extraDenoArgs,
    "--config",
    options.root === undefined ? CONFIG : resolve(options.root, "deno.json"),
    options.root === undefined ? CLI : resolve(options.root, "src/cli/mod.ts"),
    "serve",
    "--upstream",
    upstream,
    "--listen",
    `127.0.0.1:${port}`,
  ], {
    env: {
      INCONTEXT_CONTEXT_LENGTH: String(CONTEXT_LENGTH),
      INCONTEXT_COMPRESSION_WINDOW_TOKENS: String(WINDOW),
      ...backendEnv,
    },
    url: `http://127.0.0.1:${port}`,
    probe: "/incontext/livez",
    ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
  });
}

/** The Portkey gateway (`@portkey-ai/gateway` from npm). */
export function startPortkey(): Promise<ServerProcess> {
  const port = freePort();
  return spawn([
    "run",
    "-A",
    "--config",
    TEST_CONFIG,
    new URL("./_portkey_gateway.ts", import.meta.url).pathname,
    `--port=${port}`,
    "--headless",
  ], { url: `http://127.0.0.1:${port}`, probe: "/" });
}

/** The headers that send a Portkey request to an OpenAI-compatible server at `upstream`. */
export function portkeyHeaders(upstream: string): Record<string, string> {
  return {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `${upstream}/v1`,
    authorization: "Bearer unused",
  };
}
