/**
 * The cap the upstream reads is the cap the proxy decided: a body whose cap
 * key is written with an escape (`"max\u005ftokens"`) or given twice (the
 * last one counts, in JavaScript as in Python's `json.loads`) reaches the
 * upstream, short or long, on every budgeted route, as one object whose
 * cap Python reads as the proxy's `x-incontext-max-tokens`, everything else
 * as the client wrote it.
 * Driven by curl, checked by `/usr/bin/python3`.
 *
 * Covers: src/bridges/decision.ts, src/proxy/handler.ts
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  BUDGETED_ROUTES,
  curl,
  run,
  startServe,
  stillServes,
  tempFile,
} from "./_process.ts";

/** The cap field each route's requests carry. */
const FIELD: Record<(typeof BUDGETED_ROUTES)[number], string> = {
  "/v1/chat/completions": "max_tokens",
  "/v1/completions": "max_tokens",
  "/v1/responses": "max_output_tokens",
};

/** The field's name with its underscore written as a JSON escape. */
function escaped(field: string): string {
  return field.replace("_", "\\u005f");
}

/** A body for `route` of about `size` bytes whose cap members are `caps`, written after the content. */
function bodyFor(
  route: (typeof BUDGETED_ROUTES)[number],
  size: number,
  caps: string,
): string {
  // Words of its own for each body: a count the cache already holds would
  // decide before the body could be sent.
  const words = JSON.stringify(
    `${crypto.randomUUID()} ${"many words ".repeat(Math.ceil(size / 11))}`,
  );
  const content = route === "/v1/chat/completions"
    ? `"messages":[{"role":"user","content":${words}}]`
    : route === "/v1/completions"
    ? `"prompt":${words}`
    : `"input":${words}`;
  return `{"model":"m",${content},${caps}}`;
}

/**
 * What Python's `json.loads` reads of each body: the client's object and the
 * upstream's, as JSON.
 */
async function pythonReads(
  sent: string,
  received: string,
): Promise<[Record<string, unknown>, Record<string, unknown>]> {
  const ran = await run("/usr/bin/python3", [
    "-c",
    "import json, sys\n" +
    "sent, received = json.loads(sys.stdin.read())\n" +
    "print(json.dumps([json.loads(sent), json.loads(received)]))",
  ], JSON.stringify([sent, received]));
  strictEqual(ran.code, 0, ran.stderr);
  return JSON.parse(ran.stdout);
}

Deno.test("incontext serve sends the decided cap however the client wrote its cap key", async (t) => {
  await using served = await startServe();
  const { proxy, upstream } = served;
  for (const route of BUDGETED_ROUTES) {
    const field = FIELD[route];
    const plain = `"${field}"`;
    const shapes: [string, string][] = [
      ["an escaped key", `${escaped(plain)}:65536`],
      [
        "a plain key, then an escaped one",
        `${plain}:100000,${escaped(plain)}:65536`,
      ],
      [
        "a plain key, then an escaped null",
        `${plain}:100000,${escaped(plain)}:null`,
      ],
      [
        "an escaped key, then a plain one",
        `${escaped(plain)}:100000,${plain}:65536`,
      ],
      ["a plain key twice", `${plain}:100000,${plain}:65536`],
    ];
    // Under 64 KiB, and well over it.
    for (const size of [2_000, 200_000]) {
      for (const [shape, caps] of shapes) {
        await t.step(`${route}, ${size} bytes: ${shape}`, async () => {
          const body = bodyFor(route, size, caps);
          const before = upstream.requests.length;
          await using file = await tempFile(body);
          const answer = await curl(`${proxy.url}${route}`, {
            body: file.path,
          });
          strictEqual(answer.status, 200, answer.body);
          ok(/x-incontext-action: set/i.test(answer.verbose));
          const decided = Number(
            /x-incontext-max-tokens: (\d+)/i.exec(answer.verbose)?.[1],
          );
          ok(decided > 0 && decided < 65536, String(decided));
          const received = upstream.requests.slice(before)
            .filter((r) => r.path === route);
          strictEqual(received.length, 1);
          const [client, read] = await pythonReads(body, received[0]!.text);
          strictEqual(read[field], decided);
          deepStrictEqual(read, { ...client, [field]: decided });
          await stillServes(proxy);
        });
      }
    }
  }
});
