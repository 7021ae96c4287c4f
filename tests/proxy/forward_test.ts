import { deepStrictEqual } from "node:assert/strict";
import {
  forwardHeaders,
  HOP_BY_HOP,
  responseHeaders,
} from "../../src/proxy/forward.ts";

/** The filtering as a copy of the Headers with names deleted: the rule the single pass must keep. */
function reference(headers: Headers, drop: readonly string[]): Headers {
  const out = new Headers(headers);
  const named = headers.get("connection")?.split(",") ?? [];
  for (const name of [...HOP_BY_HOP, ...named, ...drop]) {
    if (name.trim() !== "") out.delete(name.trim());
  }
  return out;
}

const CASES: [string, string][][] = [
  [["content-type", "application/json"], ["authorization", "Bearer k"]],
  [
    ["Connection", "keep-alive, X-Secret-Hop ,,"],
    ["x-secret-hop", "s"],
    ["keep-alive", "timeout=5"],
    ["TE", "trailers"],
    ["host", "evil.example"],
    ["content-length", "12"],
    ["accept-encoding", "gzip"],
    ["x-a", "1"],
    ["x-a", "2"],
    ["set-cookie", "a=1"],
    ["set-cookie", "b=2"],
  ],
  [["connection", "close"], ["upgrade", "h2c"], ["x-kept", "v"]],
];

Deno.test("forwardHeaders() and responseHeaders() drop what a copy with deletes drops", async (t) => {
  await t.step("request headers, body unchanged and rewritten", () => {
    for (const pairs of CASES) {
      const headers = new Headers(pairs);
      for (const bodyChanged of [false, true]) {
        for (const readsAnswer of [false, true]) {
          const expected = reference(headers, [
            "host",
            ...(bodyChanged ? ["content-length"] : []),
          ]);
          // Only a budgeted request asks for an answer the proxy can read.
          if (readsAnswer) expected.set("accept-encoding", "identity");
          deepStrictEqual(
            [
              ...new Headers(
                forwardHeaders(headers, { bodyChanged, readsAnswer }),
              ),
            ],
            [...expected],
          );
        }
      }
    }
  });
  await t.step("response headers", () => {
    for (const pairs of CASES) {
      const headers = new Headers(pairs);
      deepStrictEqual(
        [...new Headers(responseHeaders(headers))],
        [...reference(headers, [])],
      );
    }
  });
});
