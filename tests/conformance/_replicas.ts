/**
 * N `incontext serve` processes sharing one store, behind a round-robin
 * front: the test balancer stands in for any load balancer, with no sticky
 * routing, and says which replica served each request.
 */
import { freePort, type RunningCli, spawnCli } from "../_kit/cli_process.ts";

/** The replicas and their front. */
export interface Replicas extends AsyncDisposable {
  /** The front's root URL. */
  readonly front: string;
  /** Each replica's root URL. */
  readonly urls: readonly string[];
  readonly processes: readonly RunningCli[];
}

/** Options of {@linkcode startReplicas}. */
export interface ReplicaOptions {
  readonly count: number;
  /** The upstream root. */
  readonly upstream: string;
  /** The environment of every replica. */
  readonly env: Record<string, string>;
}

/** Starts the replicas and the front; disposing stops them all. */
export async function startReplicas(
  options: ReplicaOptions,
): Promise<Replicas> {
  const ports = Array.from({ length: options.count }, () => freePort());
  const processes = ports.map((port) =>
    spawnCli([
      "serve",
      "--upstream",
      options.upstream,
      "--listen",
      `127.0.0.1:${port}`,
    ], { env: options.env })
  );
  await Promise.all(processes.map((p) => p.stdout.waitFor(/listening on/)));
  for (const [i, p] of processes.entries()) {
    if (!/listening on/.test(p.stdout.text)) {
      throw new Error(`replica ${i} did not start: ${p.stderr.text}`);
    }
  }
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  let next = 0;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, async (request) => {
    const index = next++ % urls.length;
    const url = new URL(request.url);
    const answer = await fetch(`${urls[index]}${url.pathname}${url.search}`, {
      method: request.method,
      headers: request.headers,
      body: request.body === null ? null : await request.arrayBuffer(),
    });
    const headers = new Headers(answer.headers);
    headers.set("x-test-replica", String(index));
    return new Response(answer.body, { status: answer.status, headers });
  });
  return {
    front: `http://127.0.0.1:${server.addr.port}`,
    urls,
    processes,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      for (const p of processes) {
        try {
          p.child.kill("SIGTERM");
        } catch {
          // Already stopped by the test.
        }
        await p.child.status;
        await p[Symbol.asyncDispose]();
      }
    },
  };
}

/** A replica's `/incontext/healthz` detail of its shared store. */
export async function storeState(url: string): Promise<string> {
  const response = await fetch(`${url}/incontext/healthz`);
  const body = await response.json();
  return body.sharedStore?.state ?? "none";
}

/**
 * Waits until every replica reports its store `state`, checking after each
 * answer; fails after `attempts` checks of all of them.
 */
export async function waitForStores(
  urls: readonly string[],
  state: string,
  attempts = 200,
): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    const states = await Promise.all(urls.map(storeState));
    if (states.every((s) => s === state)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the replicas' stores never became ${state}`);
}

/** A replica's metric value (0 when absent), read from `/incontext/metrics`. */
export async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/incontext/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
