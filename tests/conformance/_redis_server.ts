/**
 * Debian's `redis-server` as a child process on a free port, for the tests
 * of replicas sharing a store: started, killed as a crash would, and started
 * again on the same port.
 */
import { collect, freePort } from "../_kit/cli_process.ts";

/** What a test is told when the server is not installed. */
export const REDIS_MISSING =
  "These tests need redis-server: install the Debian package redis-server (apt-get install -y redis-server); .ci/run installs it";

/** A running (or stopped) redis-server on its own port. */
export interface RedisServer extends AsyncDisposable {
  readonly port: number;
  /** `redis://127.0.0.1:PORT/0`. */
  readonly url: string;
  /** Kills the server with SIGKILL, as a crash would; its records are gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /**
   * Stops the process (SIGSTOP), as a machine too busy to run it would: it
   * answers nothing, and keeps what it is sent, until {@linkcode resume}.
   */
  freeze(): void;
  /** Lets a frozen server run again (SIGCONT): it answers what it kept. */
  resume(): void;
}

/** Fails with {@linkcode REDIS_MISSING} when `redis-server` is not on PATH. */
export async function requireRedisServer(): Promise<void> {
  try {
    const { success } = await new Deno.Command("redis-server", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    if (success) return;
  } catch {
    // Not found: the message below says what to install.
  }
  throw new Error(REDIS_MISSING);
}

/** Options of {@linkcode startRedisServer}. */
export interface RedisServerOptions {
  /** Serve TLS only, with this certificate and key (PEM files): `rediss://`. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
}

/** Starts redis-server on a free port of the loopback, persisting nothing. */
export async function startRedisServer(
  options: RedisServerOptions = {},
): Promise<RedisServer> {
  await requireRedisServer();
  const port = freePort();
  const spawn = () => spawnOn(port, options);
  let child = await spawn();
  return {
    port,
    url: `${options.tls ? "rediss" : "redis"}://127.0.0.1:${port}/0`,
    async kill() {
      child.kill("SIGKILL");
      await child.status;
    },
    async restart() {
      child = await spawn();
    },
    freeze() {
      child.kill("SIGSTOP");
    },
    resume() {
      child.kill("SIGCONT");
    },
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already stopped.
      }
      await child.status;
    },
  };
}

async function spawnOn(
  port: number,
  { tls }: RedisServerOptions,
): Promise<Deno.ChildProcess> {
  const listen = tls === undefined ? ["--port", String(port)] : [
    "--port",
    "0",
    "--tls-port",
    String(port),
    "--tls-cert-file",
    tls.certFile,
    "--tls-key-file",
    tls.keyFile,
    "--tls-ca-cert-file",
    tls.certFile,
    "--tls-auth-clients",
    "no",
  ];
  const child = new Deno.Command("redis-server", {
    args: [
      ...listen,
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      Deno.env.get("TMPDIR") ?? "/tmp",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = collect(child.stdout);
  collect(child.stderr);
  const text = await out.waitFor(/Ready to accept connections/);
  if (!/Ready to accept connections/.test(text)) {
    throw new Error(`redis-server did not start on port ${port}`);
  }
  return child;
}
