// Covers: packages/engine/src/vllm/release.ts, src/backends/vllm/vllm_backend.ts
import {
  deepStrictEqual,
  ok,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import {
  NEWEST_VLLM_RELEASE,
  parseVllmVersion,
  vllmRules,
} from "../../../packages/engine/src/vllm/release.ts";
import { serveFakeVllmTokenizer } from "../../../src/testing/fake_vllm_server.ts";
import { VllmBackend } from "../../../src/backends/vllm/mod.ts";
import { captureLogs } from "../../_kit/log_capture.ts";
import { budget } from "../../../mod.ts";
import { TemplateRejectedError } from "../../../src/core/errors.ts";

const OPTIONS = { contextLength: 8192 };
const EFFORT = {
  messages: [{ role: "user", content: "q" }],
  reasoning_effort: "low",
};

Deno.test("vllmRules() gives the rules of the newest release at or below a version", async (t) => {
  await t.step("each release where a rule changed", () => {
    const cases: [string, string][] = [
      ["0.12.0", "0.12.0"],
      ["0.13.0", "0.12.0"],
      ["0.14.1", "0.14.0"],
      ["0.15.1", "0.15.0"],
      ["0.16.0", "0.16.0"],
      ["0.19.1", "0.16.0"],
      ["0.20.0", "0.20.0"],
      ["0.21.0", "0.20.0"],
      ["1.0.0", "0.20.0"],
    ];
    for (const [version, release] of cases) {
      strictEqual(vllmRules(version).release, release, version);
    }
  });
  await t.step("the rules differ where vLLM changed them", () => {
    strictEqual(vllmRules("0.15.1").reasoning, "either");
    strictEqual(vllmRules("0.16.0").reasoning, "reasoning");
    strictEqual(vllmRules("0.13.0").dropEmptyToolCalls, false);
    strictEqual(vllmRules("0.14.0").dropEmptyToolCalls, true);
    strictEqual(vllmRules("0.14.1").reasoningEffortKwarg, false);
    strictEqual(vllmRules("0.15.0").reasoningEffortKwarg, true);
    strictEqual(vllmRules("0.19.0").joinToolContent, false);
    strictEqual(vllmRules("0.20.0").joinToolContent, true);
  });
  await t.step("the default is the newest release known", () => {
    strictEqual(vllmRules().release, NEWEST_VLLM_RELEASE);
  });
  await t.step("versions as servers and users write them", () => {
    deepStrictEqual(parseVllmVersion("v0.16"), [0, 16, 0]);
    deepStrictEqual(parseVllmVersion("0.20.1.dev12+gabc"), [0, 20, 1]);
    deepStrictEqual(parseVllmVersion("0.16.0rc1"), [0, 16, 0]);
    strictEqual(parseVllmVersion("latest"), undefined);
    strictEqual(parseVllmVersion("0.123456.0"), undefined);
  });
  await t.step("a non-version or a release too old is a RangeError", () => {
    throws(() => vllmRules("main"), RangeError);
    throws(() => vllmRules("0.11.2"), /oldest release mirrored is 0\.12\.0/);
  });
});

Deno.test("VllmBackend reads GET /version once per server and folds as that release", async (t) => {
  const tokenizeBodies = (
    server: { requests: { path: string; text: string }[] },
  ) =>
    server.requests.filter((r) => r.path === "/tokenize").map((r) =>
      JSON.parse(r.text)
    );
  const versionReads = (server: { requests: { path: string }[] }) =>
    server.requests.filter((r) => r.path === "/version").length;

  await t.step(
    "0.14: the chat path drops reasoning_effort, so does the body",
    async () => {
      await using server = await serveFakeVllmTokenizer({
        maxModelLen: 8192,
        version: "0.14.1",
      });
      const backend = new VllmBackend({ url: server.url, cache: null });
      await backend.count(EFFORT, OPTIONS);
      await backend.count({ ...EFFORT, reasoning_effort: "high" }, OPTIONS);
      strictEqual(versionReads(server), 1);
      for (const body of tokenizeBodies(server)) {
        strictEqual(body.chat_template_kwargs, undefined);
      }
    },
  );

  await t.step("0.16: the effort reaches the template", async () => {
    await using server = await serveFakeVllmTokenizer({
      maxModelLen: 8192,
      version: "0.16.0",
    });
    const backend = new VllmBackend({ url: server.url, cache: null });
    await backend.count(EFFORT, OPTIONS);
    deepStrictEqual(tokenizeBodies(server)[0].chat_template_kwargs, {
      reasoning_effort: "low",
    });
    // /version sits beside /tokenize, and is read with a GET.
    const read = server.requests.find((r) => r.path === "/version")!;
    strictEqual(read.method, "GET");
  });

  await t.step(
    "a request that does not depend on the release reads nothing",
    async () => {
      await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192 });
      const backend = new VllmBackend({ url: server.url, cache: null });
      await backend.count(
        { messages: [{ role: "user", content: "q" }] },
        OPTIONS,
      );
      strictEqual(versionReads(server), 0);
    },
  );

  await t.step(
    "no /version: the newest rules, logged by error type",
    async () => {
      await using logs = await captureLogs();
      await using server = await serveFakeVllmTokenizer({
        maxModelLen: 8192,
        version: null,
      });
      const backend = new VllmBackend({ url: server.url, cache: null });
      await backend.count(EFFORT, OPTIONS);
      await backend.count(EFFORT, OPTIONS);
      strictEqual(versionReads(server), 1);
      deepStrictEqual(tokenizeBodies(server)[1].chat_template_kwargs, {
        reasoning_effort: "low",
      });
      ok(
        logs.lines.some((line) =>
          line.includes("vLLM /version could not be read")
        ),
      );
    },
  );

  await t.step(
    "a pinned vllmVersion reads nothing and applies its rules",
    async () => {
      await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192 });
      const backend = new VllmBackend({
        url: server.url,
        cache: null,
        vllmVersion: "0.14.0",
      });
      await backend.count(EFFORT, OPTIONS);
      strictEqual(versionReads(server), 0);
      strictEqual(tokenizeBodies(server)[0].chat_template_kwargs, undefined);
      throws(
        () => new VllmBackend({ url: server.url, vllmVersion: "0.9.0" }),
        RangeError,
      );
    },
  );

  await t.step("clearCache() reads the release again", async () => {
    await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192 });
    const backend = new VllmBackend({ url: server.url, cache: null });
    await backend.count(EFFORT, OPTIONS);
    await backend.clearCache();
    await backend.count(EFFORT, OPTIONS);
    strictEqual(versionReads(server), 2);
  });

  await t.step("a server that fails counts still fails the count", async () => {
    await using server = await serveFakeVllmTokenizer({ maxModelLen: 8192 });
    server.fault = "http-500";
    const backend = new VllmBackend({ url: server.url, cache: null });
    await rejects(backend.count(EFFORT, OPTIONS));
  });
});

Deno.test("VllmBackend reports a request /tokenize refuses (400) as rejected, and budget() leaves it unchanged", async () => {
  const refusing: typeof fetch = (input) => {
    if (String(input).endsWith("/version")) {
      return Promise.resolve(Response.json({ version: "0.20.0" }));
    }
    return Promise.resolve(Response.json({
      error: {
        message: "Expecting value: secret prompt text",
        type: "BadRequestError",
        code: 400,
      },
    }, { status: 400 }));
  };
  const backend = new VllmBackend({
    url: "http://vllm.test/tokenize",
    cache: null,
    fetch: refusing,
  });
  const request = {
    messages: [{
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "1",
        type: "function",
        function: { name: "f", arguments: "not json" },
      }],
    }],
  };
  await rejects(backend.count(request, OPTIONS), (error: unknown) => {
    ok(error instanceof TemplateRejectedError);
    ok(!(error as Error).message.includes("secret"));
    return true;
  });
  const result = await budget(request, {
    window: 8000,
    contextLength: 8192,
    backend,
  });
  strictEqual(result.action, "unchanged");
  strictEqual(result.request, request);
});
