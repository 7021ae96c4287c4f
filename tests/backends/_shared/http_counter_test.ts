import {
  deepStrictEqual,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import { HttpCounter } from "../../../src/backends/_shared/http_counter.ts";
import { createCountCache } from "../../../src/cache/mod.ts";
import { VERSION } from "../../../src/core/version.ts";

function recording(answer: unknown = { n: 3 }) {
  const seen: {
    url: string;
    headers: Record<string, string>;
    body: string | null;
  }[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    seen.push({
      url: request.url,
      headers: Object.fromEntries(request.headers),
      body: await request.text() || null,
    });
    return Response.json(answer);
  };
  return { seen, fetch };
}

const SETUP = { what: "the test backend", label: "Test /count" };
const read = (answer: Record<string, unknown>) => answer.n as number;

Deno.test("HttpCounter checks its options once, naming the option", () => {
  throws(() => new HttpCounter(SETUP, {}), {
    name: "TypeError",
    message: "Cannot create the test backend as 'url' must be a string",
  });
  throws(() => new HttpCounter(SETUP, { url: "http://h", timeoutSeconds: 0 }), {
    name: "RangeError",
  });
  throws(
    () => new HttpCounter(SETUP, { url: "http://h", apiKey: "sk-canary\nx" }),
    {
      name: "TypeError",
      message:
        "Cannot create the test backend as 'apiKey' must be a non-blank string without line breaks",
    },
  );
  strictEqual(
    new HttpCounter({ ...SETUP, defaultUrl: "https://d.test" }).url,
    "https://d.test",
  );
  strictEqual(
    new HttpCounter(SETUP, { url: "http://h", timeoutSeconds: 1.5 }).timeoutMs,
    1500,
  );
});

Deno.test("HttpCounter sends the key in its own header", async (t) => {
  for (
    const [keyHeader, expected] of [
      [undefined, { authorization: "Bearer sk-1" }],
      ["x-api-key", { "x-api-key": "sk-1" }],
    ] as const
  ) {
    await t.step(keyHeader ?? "Authorization", async () => {
      const { seen, fetch } = recording();
      const http = new HttpCounter(
        {
          ...SETUP,
          ...(keyHeader ? { keyHeader } : {}),
          headers: { "x-fixed": "1" },
        },
        { url: "http://h.test/base?k=v", apiKey: "sk-1", fetch, cache: null },
      );
      const count = await http.postCount({
        source: "s",
        url: http.endpoint("/count"),
        json: "{}",
        contextLength: 10,
        signal: undefined,
        maxBytes: 1000,
        read,
      });
      strictEqual(count, 3);
      strictEqual(seen[0]?.url, "http://h.test/base/count?k=v");
      deepStrictEqual(seen[0]?.headers, {
        "content-type": "application/json",
        "user-agent": `incontext/${VERSION}`,
        "x-fixed": "1",
        ...expected,
      });
    });
  }
});

Deno.test("HttpCounter.count() checks first, then counts through the cache", async () => {
  const { seen, fetch } = recording();
  await using cache = createCountCache({ inProcess: true });
  const http = new HttpCounter(SETUP, { url: "http://h.test", fetch, cache });
  let checks = 0;
  const once = () =>
    http.count(
      {
        key: "k",
        contextLength: 10,
        json: "{}",
        signal: undefined,
        check: () => Promise.resolve(void checks++),
      },
      async (deadline) =>
        read(
          await http.fetchJson({
            url: "http://h.test/c",
            body: "{}",
            signal: deadline.signal,
            maxBytes: 100,
          }),
        ),
    );
  strictEqual(await once(), 3);
  strictEqual(await once(), 3);
  strictEqual(checks, 2);
  strictEqual(seen.length, 1);
  await http.clearCache();
  await once();
  strictEqual(seen.length, 2);
  await rejects(
    http.count(
      {
        key: "k",
        contextLength: 10,
        json: "{}",
        signal: undefined,
        label: "Other",
        check: () => Promise.reject(new Error("x")),
      },
      () => Promise.resolve(1),
    ),
    { name: "CountError", message: "Other request failed: Error" },
  );
});
