// Covers: src/server/http_server.ts
/**
 * Descriptors taken by something other than client connections (upstream
 * connections, files, the tokenizer) make an accept fail; the server must
 * accept again once they are free. The server runs in a process of its own
 * under `ulimit -n 64` (`_descriptor_hog_server.ts`), which opens files
 * until none is left while a client waits to be accepted, then closes them:
 * the waiting client and a new one are both served, and the process never
 * crashes.
 */
import { ok, strictEqual } from "node:assert/strict";
import { collect, hasStackTrace } from "../_kit/cli_process.ts";
import { unlessHung } from "../_kit/hang.ts";

const HOG = new URL("./_descriptor_hog_server.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const OPEN_FILES = 64;

/** Reads a raw answer until the server closes the connection. */
async function answer(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buffer = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buffer);
    if (n === null) return text;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
}

Deno.test("startHttpServer() accepts again once descriptors taken elsewhere are free", async () => {
  const child = new Deno.Command("/bin/sh", {
    args: [
      "-c",
      `ulimit -n ${OPEN_FILES} && exec "$0" "$@"`,
      Deno.execPath(),
      "run",
      "--config",
      CONFIG,
      "--allow-net=127.0.0.1",
      "--allow-read",
      "--allow-env",
      HOG,
    ],
    env: { NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  const stdin = child.stdin.getWriter();
  const run = async (command: string) => {
    await stdin.write(new TextEncoder().encode(`${command}\n`));
    const done = new RegExp(`^${command} done$`, "m");
    await unlessHung(command, stdout.waitFor(done));
    ok(done.test(stdout.text), stdout.text + stderr.text);
  };
  let waiting: Deno.Conn | undefined;
  try {
    await unlessHung("the server listening", stdout.waitFor(/listening \d+/));
    const port = Number(/listening (\d+)/.exec(stdout.text)?.[1]);
    ok(port > 0, stdout.text + stderr.text);
    const served = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        headers: { connection: "close" },
      });
      strictEqual(await response.text(), "ok");
    };
    await served();

    await run("exhaust");
    // This client's accept fails: the process has no descriptor for it.
    waiting = await Deno.connect({ hostname: "127.0.0.1", port });
    await waiting.write(
      new TextEncoder().encode(
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
      ),
    );
    await run("turn");
    await run("free");

    const text = await unlessHung("the waiting client served", answer(waiting));
    ok(text.startsWith("HTTP/1.1 200"), text);
    await unlessHung("a new client served", served());
    ok(!hasStackTrace(stderr.text), stderr.text);
  } finally {
    waiting?.close();
    await stdin.close().catch(() => {});
    await unlessHung("the server's exit", child.status).catch(() => {
      child.kill("SIGKILL");
    });
    await child.status;
    await Promise.all([stdout.done, stderr.done]);
  }
});
