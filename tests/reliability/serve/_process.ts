/**
 * The robustness suite's parts: the real `incontext serve` process (and
 * `incontext tokenize-server` and `incontext demo-upstream`) in front of the
 * fake vLLM, the real clients that drive it (curl with its default
 * behaviour, Python's http.client and urllib, raw sockets), the memory a
 * process takes while they do, and the check every test ends with: the
 * process is still alive and answers a normal request.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import {
  type FakeUpstream,
  serveFakeUpstream,
} from "../../../src/testing/mod.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";
import { HANG_MS } from "../../_kit/hang.ts";
import {
  processMemory,
  resetMemoryPeak,
  type SpawnedProxy,
  spawnProxy,
} from "../_proxy_spawn.ts";
import { freePort, type RunningCli, spawnCli } from "../../_kit/cli_process.ts";

/** The body limit the suite's processes run with: small, so that bodies over it are quick to send. */
export const LIMIT = 1024 * 1024;

export const CHAT = "/v1/chat/completions";

/** The budgeted routes: each refuses a body over the limit itself. */
export const BUDGETED_ROUTES = [
  CHAT,
  "/v1/completions",
  "/v1/responses",
] as const;

/** `incontext serve` in front of the fake vLLM. */
export interface Served extends AsyncDisposable {
  readonly upstream: FakeUpstream;
  readonly proxy: SpawnedProxy;
}

/** Starts the fake vLLM and `incontext serve` in front of it, counting with its /tokenize. */
export async function startServe(
  env: Record<string, string> = {},
): Promise<Served> {
  const upstream = await serveFakeUpstream();
  let proxy: SpawnedProxy;
  try {
    proxy = await spawnProxy(upstream.url, {
      INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
      INCONTEXT_MAX_REQUEST_BYTES: String(LIMIT),
      INCONTEXT_LOG_LEVEL: "debug",
      ...env,
    });
  } catch (error) {
    await upstream[Symbol.asyncDispose]();
    throw error;
  }
  return {
    upstream,
    proxy,
    async [Symbol.asyncDispose]() {
      await proxy[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

/** A small chat body that the fake answers. */
export function chatBody(content = "still there?"): string {
  return JSON.stringify({
    model: "m",
    max_tokens: 65536,
    messages: [{ role: "user", content }],
  });
}

/** A chat body of about `bytes` bytes. */
export function chatBodyOf(bytes: number): string {
  return chatBody("x".repeat(bytes));
}

/** Whether the child process has exited, without waiting for it. */
async function exited(child: Deno.ChildProcess): Promise<boolean> {
  const pending = Symbol("pending");
  const settled = await Promise.race([
    child.status,
    new Promise<typeof pending>((resolve) => setTimeout(resolve, 0, pending)),
  ]);
  return settled !== pending;
}

/**
 * What every test of the suite ends with: the process has not exited, has
 * printed no uncaught error, and budgets a normal request.
 */
export async function stillServes(proxy: SpawnedProxy): Promise<void> {
  strictEqual(await exited(proxy.child), false, proxy.stderr.text.slice(-2000));
  ok(!/Uncaught/.test(proxy.stderr.text), proxy.stderr.text.slice(-2000));
  const response = await fetch(`${proxy.url}${CHAT}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: chatBody(),
  });
  strictEqual(response.status, 200);
  strictEqual(response.headers.get("x-incontext-action"), "set");
  const reply = await response.json();
  strictEqual(reply.choices[0].message.content, "Noted: 1 messages.");
}

/** What a client program printed and how it ended. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program to its end, its output captured. */
export async function run(
  program: string,
  args: readonly string[],
  stdin?: string,
): Promise<Ran> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args: [...args],
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    throw new Error(
      `${program} is missing: the serve suite drives the proxy with Debian's curl and python3 (apt-get install -y curl python3)`,
    );
  }
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
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

/** A file holding `text`, removed on disposal: curl's `--data-binary @file`. */
export async function tempFile(
  text: string,
): Promise<{ readonly path: string } & AsyncDisposable> {
  const path = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(path, text);
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path),
  };
}

/**
 * curl as a user runs it: no option beyond the URL, the body file and the
 * content type, so that it adds `Expect: 100-continue` to a body over
 * 1 MiB by itself. `-v` shows the interim answers; `-w` the final status.
 */
export async function curl(
  url: string,
  options: { readonly body?: string; readonly extra?: readonly string[] } = {},
): Promise<{ status: number; verbose: string; body: string }> {
  const args = [
    "-sS",
    "-v",
    "--max-time",
    String(HANG_MS / 1000),
    "-o",
    "-",
    "-w",
    "\n%{http_code}",
    ...(options.body === undefined
      ? []
      : ["--data-binary", `@${options.body}`]),
    ...(options.body === undefined
      ? []
      : ["-H", "content-type: application/json"]),
    ...(options.extra ?? []),
    url,
  ];
  const ran = await run("curl", args);
  const lines = ran.stdout.split("\n");
  const status = Number(lines.pop());
  return { status, verbose: ran.stderr, body: lines.join("\n") };
}

/** Runs a Python program with the Debian python3 (http.client, urllib). */
export async function python(
  source: string,
  args: readonly string[] = [],
): Promise<Ran> {
  return await run("/usr/bin/python3", ["-c", source, ...args]);
}

/** The proxy's metrics text. */
export async function metrics(proxy: SpawnedProxy): Promise<string> {
  return await (await fetch(`${proxy.url}/incontext/metrics`)).text();
}

/** The value of one metric series in a metrics text (0 when absent). */
export function metric(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);

/** `incontext tokenize-server` as a process, for a real model folder. */
export interface TokenizeServer extends RunningCli {
  readonly url: string;
  readonly port: number;
}

/** Starts `incontext tokenize-server` on the Qwen3 tokenizer folder. */
export async function startTokenizeServer(
  env: Record<string, string> = {},
): Promise<TokenizeServer> {
  const port = freePort();
  const running = spawnCli([
    "tokenize-server",
    "--model-dir",
    QWEN3,
    "--max-model-len",
    "32768",
    "--listen",
    `127.0.0.1:${port}`,
  ], { env: { INCONTEXT_MAX_REQUEST_BYTES: String(LIMIT), ...env } });
  if (!/listening on/.test(await running.stdout.waitFor(/listening on/))) {
    await running[Symbol.asyncDispose]();
    throw new Error(
      `The tokenize server did not start: ${running.stderr.text}`,
    );
  }
  return { ...running, url: `http://127.0.0.1:${port}`, port };
}

/** The tokenize server's end of every test: alive, and it tokenizes. */
export async function stillTokenizes(server: TokenizeServer): Promise<void> {
  strictEqual(await exited(server.child), false, server.stderr.text);
  ok(!/Uncaught/.test(server.stderr.text), server.stderr.text);
  const response = await fetch(`${server.url}/tokenize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: "hello" }),
  });
  strictEqual(response.status, 200);
  strictEqual((await response.json()).count, 1);
}

/** `incontext demo-upstream` as a process. */
export interface DemoUpstream extends RunningCli {
  readonly url: string;
  readonly port: number;
}

/** Starts `incontext demo-upstream` on a free port. */
export async function startDemoUpstream(
  env: Record<string, string> = {},
): Promise<DemoUpstream> {
  const port = freePort();
  const running = spawnCli(["demo-upstream", "--listen", `127.0.0.1:${port}`], {
    env: { INCONTEXT_MAX_REQUEST_BYTES: String(LIMIT), ...env },
  });
  if (!/listening on/.test(await running.stdout.waitFor(/listening on/))) {
    await running[Symbol.asyncDispose]();
    throw new Error(`The demo upstream did not start: ${running.stderr.text}`);
  }
  return { ...running, url: `http://127.0.0.1:${port}`, port };
}

/** The demo upstream's end of every test: alive, and it answers a chat. */
export async function stillAnswers(demo: DemoUpstream): Promise<void> {
  strictEqual(await exited(demo.child), false, demo.stderr.text);
  ok(!/Uncaught/.test(demo.stderr.text), demo.stderr.text);
  // No cap: the demo, as vLLM, refuses one past its context length.
  const response = await fetch(`${demo.url}${CHAT}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: "still there?" }],
    }),
  });
  strictEqual(response.status, 200);
  const reply = await response.json();
  strictEqual(reply.choices[0].message.content, "Noted: 1 messages.");
}

/**
 * How far process `pid`'s resident memory rose, at its peak while `work`
 * ran, above what it was before, in bytes.
 */
export async function memoryGrowth(
  pid: number,
  work: () => Promise<void>,
): Promise<number> {
  await resetMemoryPeak(pid);
  const before = await processMemory(pid);
  await work();
  const after = await processMemory(pid);
  ok(before.rss > 0 && after.peak > 0, `no /proc/${pid}/status`);
  return after.peak - before.rss;
}
