import { getLogger } from "@logtape/logtape";
import { ok, rejects, strictEqual } from "node:assert/strict";
import { countGuard } from "../../../src/backends/_shared/count_guard.ts";
import { CountError, TemplateRejectedError } from "../../../src/core/errors.ts";
import { captureLogs } from "../../_kit/log_capture.ts";

const guarded = countGuard({
  what: "the test backend",
  failure: "The test count failed",
  logger: getLogger(["incontext", "test"]),
});
const options = { contextLength: 8192 };

Deno.test("countGuard() frames every count the same way", async (t) => {
  await t.step(
    "a bad contextLength is a RangeError naming the backend",
    async () => {
      await rejects(
        guarded(
          { source: "src", request: {}, options: { contextLength: 0 } },
          () => Promise.resolve(1),
        ),
        {
          name: "RangeError",
          message:
            "Cannot count with the test backend as 'contextLength' must be a positive integer: current value is 0",
        },
      );
    },
  );

  await t.step(
    "a request that is not an object fails before the count",
    async () => {
      let called = false;
      await rejects(
        guarded(
          { source: "src", request: [] as never, options },
          () => {
            called = true;
            return Promise.resolve(1);
          },
        ),
        {
          name: "CountError",
          message: "Cannot count the request as it is not a JSON object",
        },
      );
      strictEqual(called, false);
    },
  );

  await t.step("the count gets the checked context length", async () => {
    strictEqual(
      await guarded(
        { source: "src", request: {}, options },
        (_r, n) => Promise.resolve(n),
      ),
      8192,
    );
  });

  await t.step(
    "CountErrors and TemplateRejectedErrors pass as they are",
    async () => {
      const error = new TemplateRejectedError();
      await rejects(
        guarded(
          { source: "src", request: {}, options },
          () => Promise.reject(error),
        ),
        (e) => e === error,
      );
    },
  );

  await t.step(
    "any other error becomes a CountError with only its type",
    async () => {
      const secret = "sk-canary-guard";
      const error = await guarded({
        source: "src",
        request: {},
        options: options,
      }, () => {
        throw new TypeError(`boom ${secret}`);
      }).catch((e) => e);
      ok(error instanceof CountError);
      strictEqual(error.message, "The test count failed: TypeError");
      strictEqual((error.cause as Error).name, "TypeError");
      ok(
        !`${error.stack} ${(error.cause as Error).message} ${
          (error.cause as Error).stack
        }`.includes(secret),
      );
    },
  );

  await t.step(
    "logs name the source, the count and error types, never the request",
    async () => {
      await using logs = await captureLogs();
      const request = {
        messages: [{ role: "user", content: "secret prompt" }],
      };
      await guarded(
        { source: "vllm-tokenize", request, options },
        () => Promise.resolve(7),
      );
      await guarded(
        { source: "openai-input-tokens", request, options },
        () =>
          Promise.resolve({
            tokens: 9,
            estimatedTokens: 9,
            source: "openai-o200k-estimate",
          }),
      );
      await guarded(
        { source: "src", request, options },
        () => Promise.reject(new SyntaxError("secret prompt")),
      )
        .catch(() => {});
      strictEqual(logs.lines.length, 3);
      ok(
        logs.lines[0]!.includes('"count":7') &&
          logs.lines[0]!.includes("vllm-tokenize"),
      );
      ok(
        logs.lines[1]!.includes('"count":9') &&
          logs.lines[1]!.includes("openai-o200k-estimate"),
      );
      ok(
        logs.lines[2]!.includes('"errorType":"CountError"') &&
          logs.lines[2]!.includes('"causeType":"SyntaxError"'),
      );
      ok(logs.lines.every((line) => !line.includes("secret prompt")));
    },
  );
});
