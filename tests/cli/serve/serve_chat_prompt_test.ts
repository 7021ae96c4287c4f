// Covers: src/cli/serve/command.ts, src/cli/check/command.ts, src/cli/check/chat_usage.ts, src/proxy/status_page.ts, src/testing/fake_upstream.ts
/**
 * A vLLM whose chat endpoint builds another prompt than `/tokenize` renders
 * (gpt-oss, which it renders through Harmony), through the real
 * `incontext serve` and `incontext check`: counts come from usage anchors
 * with the fallback margin, never from `/tokenize` called exact, and the
 * start-up log, the status page and the check say so and why.
 */
import { ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { serveFakeUpstream } from "../../../src/testing/mod.ts";
import { postJson } from "../../_kit/proxy_fixture.ts";
import { runCli } from "../../_kit/cli_process.ts";
import { spawnProxy } from "../../reliability/_proxy_spawn.ts";

/** The chat prompt a third larger than `/tokenize`'s, as in a reasoning loop. */
const servedPromptTokens = (tokenized: number) => Math.ceil(tokenized * 4 / 3);

const TURN = [{
  role: "user",
  content: "Name three rivers of Europe, in one line each.",
}];

/** A model folder holding only gpt-oss's `config.json`, removed on disposal. */
async function gptOssFolder(): Promise<
  { readonly dir: string } & AsyncDisposable
> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    join(dir, "config.json"),
    JSON.stringify({ model_type: "gpt_oss" }),
  );
  return {
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

interface Decision {
  readonly source: string;
  readonly promptTokens: number;
  readonly maxTokens: number;
}

Deno.test("incontext serve counts gpt-oss from usage anchors, and says why in its log and on its status page", async () => {
  await using upstream = await serveFakeUpstream({ servedPromptTokens });
  await using folder = await gptOssFolder();
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_BACKEND: "vllm",
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
    INCONTEXT_TOKENIZER_DIR: folder.dir,
  });
  const first = await (await postJson(`${proxy.url}/v1/chat/completions`, {
    model: "served",
    messages: TURN,
  })).json();
  const second = await postJson(`${proxy.url}/v1/chat/completions`, {
    model: "served",
    messages: [...TURN, first.choices[0].message, {
      role: "user",
      content: "And two more.",
    }],
  });
  strictEqual(second.status, 200);
  await second.text();
  const page = await (await fetch(`${proxy.url}/incontext/`)).text();
  const view = await (await fetch(`${proxy.url}/incontext/context`)).json();
  proxy.child.kill("SIGTERM");
  strictEqual((await proxy.child.status).code, 0);
  const log = proxy.stdout.text + proxy.stderr.text;
  ok(
    /counts of fake-model come from usage anchors, estimated with the fallback margin until a conversation has one: config.json's model_type is gpt_oss: vLLM renders its chat prompt through Harmony/
      .test(log),
    log,
  );
  ok(!log.includes("count differs from the server's usage"), log);
  ok(page.includes("<b>Counts are not exact</b>: config.json"), page);
  const [turn1, turn2] = view.decisions as Decision[];
  strictEqual(turn1!.source, "vllm-tokenize-estimate");
  // The whole count is an estimate: min(F, the count) is kept free beyond it.
  strictEqual(
    turn1!.maxTokens,
    55705 - turn1!.promptTokens - Math.min(1024, turn1!.promptTokens),
  );
  strictEqual(turn2!.source, "usage-anchor");
  // Exact up to the first reply: the chat's own usage, not /tokenize's.
  ok(
    turn2!.promptTokens >=
      first.usage.prompt_tokens + first.usage.completion_tokens,
    JSON.stringify(view.decisions),
  );
  strictEqual(view.verification.models.length, 0, "estimates are not checked");
});

Deno.test("incontext serve counts a model by usage anchors once its usage contradicted /tokenize twice", async () => {
  await using upstream = await serveFakeUpstream({ servedPromptTokens });
  await using proxy = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
  });
  const sources: string[] = [];
  for (let i = 0; i < 3; i++) {
    const response = await postJson(`${proxy.url}/v1/chat/completions`, {
      model: "agent",
      messages: [{ role: "user", content: `Question ${i}: which river?` }],
    });
    sources.push(response.headers.get("x-incontext-source") ?? "none");
    await response.text();
  }
  proxy.child.kill("SIGTERM");
  strictEqual((await proxy.child.status).code, 0);
  const log = proxy.stdout.text + proxy.stderr.text;
  strictEqual(
    sources.join(),
    "vllm-tokenize,vllm-tokenize,vllm-tokenize-estimate",
  );
  ok(
    /model=agent counts by estimate from now on, from usage anchors where a conversation has one: the server's usage contradicted 2 of its \/tokenize counts/
      .test(log),
    log,
  );
  ok(!log.includes("which river"), "no prompt text in the log");
});

Deno.test("incontext check --check-chat on compares /tokenize with the chat's usage and names the count used", async (t) => {
  await t.step(
    "they differ: one line says so, and the exit code is 1",
    async () => {
      await using upstream = await serveFakeUpstream({ servedPromptTokens });
      const output = await runCli([
        "check",
        "--upstream",
        upstream.url,
        "--check-chat",
        "on",
      ], {
        env: {
          INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
          INCONTEXT_CONTEXT_LENGTH: "65536",
          INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
        },
      });
      strictEqual(output.code, 1, output.stdout + output.stderr);
      const line = output.stdout.split("\n").find((l) =>
        l.startsWith("chat usage:")
      );
      ok(
        line !== undefined &&
          /vllm-tokenize counted (\d+) prompt tokens, the chat's usage (\d+): they differ, so serve counts a model exactly until the usage contradicts 2 of its counts, then from usage anchors with the fallback margin$/
            .test(line),
        output.stdout,
      );
    },
  );
  await t.step(
    "gpt-oss by its served name: the chat prompt line says which count is used",
    async () => {
      await using upstream = await serveFakeUpstream({
        servedPromptTokens,
        model: "openai/gpt-oss-20b",
      });
      const output = await runCli(["check", "--upstream", upstream.url], {
        env: {
          INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
          INCONTEXT_CONTEXT_LENGTH: "65536",
          INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
        },
      });
      strictEqual(output.code, 1, output.stdout + output.stderr);
      ok(
        output.stdout.includes(
          "chat prompt:    openai/gpt-oss-20b: the model's name says gpt-oss: vLLM renders its chat prompt through Harmony, not the chat template /tokenize renders; counts come from usage anchors",
        ),
        output.stdout,
      );
      ok(!output.stdout.includes("chat usage:"), "not asked: no generation");
    },
  );
  await t.step("they agree: the exit code stays 0", async () => {
    await using upstream = await serveFakeUpstream();
    const output = await runCli([
      "check",
      "--upstream",
      upstream.url,
      "--check-chat",
      "on",
    ], {
      env: {
        INCONTEXT_TOKENIZER_URL: upstream.tokenizeUrl,
        INCONTEXT_CONTEXT_LENGTH: "65536",
        INCONTEXT_COMPRESSION_WINDOW_TOKENS: "55705",
      },
    });
    strictEqual(output.code, 0, output.stdout + output.stderr);
    ok(/chat usage: +.*: they agree$/m.test(output.stdout), output.stdout);
  });
});
