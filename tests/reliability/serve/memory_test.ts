/**
 * A body over `INCONTEXT_MAX_REQUEST_BYTES` never takes the memory of a
 * server the package ships: `incontext serve`, `tokenize-server` and
 * `demo-upstream`, started as processes, each get 100 MiB bodies from
 * Python's http.client, which sends the whole body before it reads: with
 * its length declared, in chunks, four at once, and after a head over the
 * limit. Each is answered (413, or 431 for the head), and the process's
 * resident memory, read from /proc at its peak, grows by less than
 * {@linkcode bound}, far below what it was sent.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import {
  CHAT,
  type DemoUpstream,
  LIMIT,
  memoryGrowth,
  python,
  startDemoUpstream,
  startServe,
  startTokenizeServer,
  stillAnswers,
  stillServes,
  stillTokenizes,
  type TokenizeServer,
} from "./_process.ts";
import type { SpawnedProxy } from "../_proxy_spawn.ts";
import { DROP_BYTES } from "../../../src/server/request_body.ts";

const MIB = 1024 * 1024;

/**
 * How much a process may grow while `uploads` bodies of 100 MiB come in:
 * per upload, what is read up to the limit and dropped past it, and room
 * for the collector's timing. Holding the bodies would take 100 MiB each.
 */
function bound(uploads: number): number {
  return 24 * MIB + uploads * (LIMIT + DROP_BYTES);
}

/**
 * Sends one 100 MiB upload per framing at once, each on its own
 * connection, and prints each answer's status. The server may
 * stop reading before the body's end: the send then fails, and the answer
 * is read anyway, as httpx (under the openai SDK) reads it.
 */
const UPLOADS = `
import http.client, socket, sys, threading
port, path, framings = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
BLOCK = b"x" * (1024 * 1024)
BODY = BLOCK * 100
JSON = {"content-type": "application/json"}
def upload(framing, answers, i):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        if framing == "chunked":
            conn.request("POST", path, body=(BLOCK for _ in range(100)), encode_chunked=True, headers=JSON)
        elif framing == "length":
            conn.request("POST", path, body=BODY, headers=JSON)
        else:
            conn.connect()
            conn.sock.sendall(("POST %s HTTP/1.1\\r\\nhost: x\\r\\ncontent-length: %d\\r\\nx-big: %s\\r\\n\\r\\n" % (path, len(BODY), "a" * 100000)).encode() + BODY)
    except OSError:
        pass
    if framing == "head":
        answers[i] = conn.sock.recv(200)[9:12].decode()
    else:
        answers[i] = conn.getresponse().status
answers = [None] * len(framings)
threads = [threading.Thread(target=upload, args=(f, answers, i)) for i, f in enumerate(framings)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print("\\n".join(str(answer) for answer in answers))
`;

/** What each framing is answered. */
const ANSWERS = { length: "413", chunked: "413", head: "431" } as const;

type Framing = keyof typeof ANSWERS;

const CASES: readonly (readonly [string, readonly Framing[]])[] = [
  ["100 MiB with its length declared", ["length"]],
  ["100 MiB in chunks", ["chunked"]],
  ["four of 100 MiB at once, declared and chunked", [
    "length",
    "chunked",
    "length",
    "chunked",
  ]],
  ["100 MiB after a head over the limit", ["head"]],
];

/**
 * Runs the uploads against `port`, checks each answer, and that `pid`
 * grew by less than {@linkcode bound}.
 */
async function uploadsWithin(
  { pid, port, path }: { pid: number; port: number; path: string },
  framings: readonly Framing[],
): Promise<void> {
  const growth = await memoryGrowth(pid, async () => {
    const ran = await python(UPLOADS, [String(port), path, framings.join()]);
    deepStrictEqual(
      ran.stdout.trim().split("\n"),
      framings.map((framing) => ANSWERS[framing]),
      ran.stderr,
    );
  });
  const most = bound(framings.length);
  const measured = `grew by ${
    (growth / MIB).toFixed(1)
  } MiB at the peak, bound ${most / MIB} MiB`;
  // The figures of docs/reliability.md ("Memory a body takes").
  console.log(measured);
  ok(growth < most, measured);
}

// Each case gets a fresh process: memory a process has freed it reuses,
// so one that once held a body would show no growth on the next.

Deno.test("incontext serve holds no body over the limit, declared or chunked, one or several at once", async (t) => {
  for (const [what, framings] of CASES) {
    await t.step(what, async () => {
      await using served = await startServe();
      const proxy: SpawnedProxy = served.proxy;
      await uploadsWithin(
        { pid: proxy.child.pid, port: proxy.port, path: CHAT },
        framings,
      );
      await stillServes(proxy);
    });
  }
});

Deno.test("incontext tokenize-server holds no body over the limit, declared or chunked, one or several at once", async (t) => {
  for (const [what, framings] of CASES) {
    await t.step(what, async () => {
      await using server: TokenizeServer = await startTokenizeServer();
      await uploadsWithin(
        { pid: server.child.pid, port: server.port, path: "/tokenize" },
        framings,
      );
      await stillTokenizes(server);
    });
  }
});

Deno.test("incontext demo-upstream holds no body over the limit, declared or chunked, one or several at once", async (t) => {
  for (const [what, framings] of CASES) {
    await t.step(what, async () => {
      await using demo: DemoUpstream = await startDemoUpstream();
      await uploadsWithin(
        { pid: demo.child.pid, port: demo.port, path: CHAT },
        framings,
      );
      await stillAnswers(demo);
    });
  }
});
