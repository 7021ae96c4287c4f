/**
 * Shared set-up of the proxy benchmarks: the servers (each in its own Worker,
 * see `_proxy_bench_worker.ts`), request bodies, timing and table helpers.
 *
 * @module
 */
import { agentRequest } from "./_requests.ts";

/** The served context length: a 500 KB prompt (~125k tokens) fits. */
export const CONTEXT = 262144;
/** The compression window (Hermes' arithmetic for 262,144). */
export const WINDOW = 196608;

/** What a benchmark Worker serves. */
export type ServerSpec =
  | { readonly role: "upstream"; readonly contextLength: number }
  | { readonly role: "bare"; readonly upstream: string }
  | {
    readonly role: "incontext";
    readonly upstream: string;
    readonly window: number;
    readonly contextLength: number;
    /** `"worker"`: the shared worker-backed count cache, as examples/server.ts. */
    readonly cache: "worker" | "in-process";
    /** `"node"`: served by node:http with its bounds, as `incontext serve`; else Deno.serve. */
    readonly server?: "deno" | "node";
  };

/** A server running in its own Worker on a port the system picked. */
export interface BenchServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
}

/** Starts a server in a new Worker and waits until it listens. */
export async function startServer(spec: ServerSpec): Promise<BenchServer> {
  const worker = new Worker(
    new URL("./_proxy_bench_worker.ts", import.meta.url),
    { type: "module" },
  );
  const reply = (): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      worker.onmessage = (event) => resolve(event.data);
      worker.onerror = (event) => {
        event.preventDefault();
        reject(new Error(`benchmark server failed: ${event.message}`));
      };
    });
  const listening = reply();
  worker.postMessage(spec);
  const { url } = await listening;
  return {
    url: String(url),
    async [Symbol.asyncDispose]() {
      const closed = reply();
      worker.postMessage("close");
      await closed;
      worker.terminate();
    },
  };
}

/** A chat request body of about `bytes` bytes of JSON, encoded once. */
/** The four servers every proxy benchmark compares, each in its own Worker. */
export interface BenchServers extends AsyncDisposable {
  readonly upstream: BenchServer;
  readonly bare: BenchServer;
  readonly incontext: BenchServer;
  readonly inProcess: BenchServer;
  /** The in-process proxy served by node:http with its bounds, as `incontext serve`. */
  readonly served: BenchServer;
}

/** Starts the upstream, the bare proxy, and incontext with each kind of count cache. */
export async function startServers(): Promise<BenchServers> {
  const upstream = await startServer({
    role: "upstream",
    contextLength: CONTEXT,
  });
  const bare = await startServer({ role: "bare", upstream: upstream.url });
  const proxy = (cache: "worker" | "in-process", server?: "node") =>
    startServer({
      role: "incontext",
      upstream: upstream.url,
      window: WINDOW,
      contextLength: CONTEXT,
      cache,
      ...(server === undefined ? {} : { server }),
    });
  const incontext = await proxy("worker");
  const inProcess = await proxy("in-process");
  const served = await proxy("in-process", "node");
  return {
    upstream,
    bare,
    incontext,
    inProcess,
    served,
    async [Symbol.asyncDispose]() {
      for (const server of [served, inProcess, incontext, bare, upstream]) {
        await server[Symbol.asyncDispose]();
      }
    },
  };
}

export function chatBody(
  bytes: number,
  options: { nonce?: string; stream?: boolean } = {},
): Uint8Array<ArrayBuffer> {
  const request = agentRequest(bytes, options.nonce ?? "");
  if (options.stream) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  return new TextEncoder().encode(JSON.stringify(request));
}

const HEADERS = { "content-type": "application/json" };

/** POSTs a chat completion and reads the whole answer; fails on a non-200. */
export async function post(
  root: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<Response> {
  const response = await fetch(`${root}/v1/chat/completions`, {
    method: "POST",
    headers: HEADERS,
    body,
  });
  await response.arrayBuffer();
  if (response.status !== 200) {
    throw new Error(`${root} answered ${response.status}`);
  }
  return response;
}

/** Milliseconds of one whole non-streamed request and response. */
export async function timeRequest(
  root: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<number> {
  const start = performance.now();
  await post(root, body);
  return performance.now() - start;
}

/** Milliseconds until the first body chunk of a streamed answer; reads the rest after. */
export async function timeFirstByte(
  root: string,
  body: Uint8Array<ArrayBuffer>,
): Promise<number> {
  const start = performance.now();
  const response = await fetch(`${root}/v1/chat/completions`, {
    method: "POST",
    headers: HEADERS,
    body,
  });
  if (response.status !== 200 || response.body === null) {
    throw new Error(`${root} answered ${response.status}`);
  }
  const reader = response.body.getReader();
  const first = await reader.read();
  const elapsed = performance.now() - start;
  if (first.done) throw new Error(`${root} sent an empty stream`);
  while (!(await reader.read()).done) { /* drain */ }
  return elapsed;
}

/** The `p` quantile (0..1) of the samples, by the nearest-rank rule. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** Milliseconds with three decimals. */
export function ms(value: number): string {
  return `${value.toFixed(3)} ms`;
}

/** Signed milliseconds with three decimals. */
export function added(value: number): string {
  return `${value >= 0 ? "+" : ""}${value.toFixed(3)} ms`;
}

/** Prints the runtime and machine the figures come from. */
export function printMachine(): void {
  const { deno, v8, typescript } = Deno.version;
  console.log(
    `Deno ${deno} (V8 ${v8}, TypeScript ${typescript}), ${Deno.build.os}/${Deno.build.arch}, navigator.hardwareConcurrency = ${navigator.hardwareConcurrency}`,
  );
}

/** Prints a markdown table. */
export function printTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): void {
  console.log(`| ${header.join(" | ")} |`);
  console.log(`|${header.map(() => " --- ").join("|")}|`);
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
}
