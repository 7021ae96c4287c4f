/**
 * startHttpServer in a process of its own, where something besides client
 * connections takes every descriptor: run under a low `ulimit -n`, it
 * answers each request with 200 and reads commands, one a line, on stdin:
 *
 * - `exhaust` opens `/dev/null` until no descriptor is left;
 * - `turn` lets the event loop turn twice (what was due has run);
 * - `free` closes what `exhaust` opened.
 *
 * It prints `listening <port>` once it listens and `<command> done` after
 * each command; stdin's end stops it.
 */
import { closeSync, openSync } from "node:fs";
import { startHttpServer } from "../../src/server/http_server.ts";

const server = await startHttpServer(
  () => Promise.resolve(new Response("ok")),
  {
    hostname: "127.0.0.1",
    port: 0,
    headersTimeoutMs: 60_000,
    requestTimeoutMs: 60_000,
    keepAliveTimeoutMs: 1_000,
    maxConnections: 8,
    backlog: 8,
  },
);
console.log(`listening ${server.port}`);

const held: number[] = [];
const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
const commands: Record<string, () => Promise<void> | void> = {
  exhaust() {
    try {
      for (;;) held.push(openSync("/dev/null", "r"));
    } catch (error) {
      if ((error as { code?: string }).code !== "EMFILE") throw error;
    }
  },
  async turn() {
    await turn();
    await turn();
  },
  free() {
    for (const fd of held.splice(0)) closeSync(fd);
  },
};

let pending = "";
for await (const chunk of Deno.stdin.readable) {
  pending += new TextDecoder().decode(chunk);
  let end: number;
  while ((end = pending.indexOf("\n")) >= 0) {
    const command = pending.slice(0, end);
    pending = pending.slice(end + 1);
    await commands[command]?.();
    console.log(`${command} done`);
  }
}
await server[Symbol.asyncDispose]();
