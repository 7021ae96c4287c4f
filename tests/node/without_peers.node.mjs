// The Node proof's install without optional peers: `prove.ts` installs the
// two tarballs alone into a fresh project, without `gpt-tokenizer`, and runs
// this file there with `node --test`. budget() and every backend but the
// OpenAI chat estimate work; that estimate says what to install.
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { ok, rejects, strictEqual } from "node:assert/strict";
import { budget, CountError } from "@incontext/incontext";
import { VllmBackend } from "@incontext/incontext/vllm";
import { OpenAIBackend } from "@incontext/incontext/openai";
import {
  createFakeOpenAIHandler,
  createFakeVllmTokenizerHandler,
} from "@incontext/incontext/testing";

const CONTEXT = 65536;
const WINDOW = 55705;
const CHAT = {
  model: "gpt-4o",
  max_tokens: CONTEXT,
  messages: [{ role: "user", content: "Hello" }],
};

test("gpt-tokenizer is not installed", async () => {
  await rejects(import("gpt-tokenizer"), { code: "ERR_MODULE_NOT_FOUND" });
});

test("budget() with VllmBackend budgets without gpt-tokenizer", async () => {
  const fake = createFakeVllmTokenizerHandler({
    maxModelLen: CONTEXT,
    countTokens: () => 1705,
  });
  const backend = new VllmBackend({
    url: "http://vllm.test/tokenize",
    fetch: fake.fetch,
    cache: null,
  });
  const result = await budget(CHAT, {
    window: WINDOW,
    contextLength: CONTEXT,
    backend,
  });
  strictEqual(result.source, "vllm-tokenize");
  strictEqual(result.request.max_tokens, WINDOW - 1705);
});

test("OpenAIBackend counts Responses requests without gpt-tokenizer", async () => {
  const fake = createFakeOpenAIHandler({ countTokens: () => 42 });
  const backend = new OpenAIBackend({
    url: "http://openai.test",
    fetch: fake.fetch,
    cache: null,
  });
  const counted = await backend.count(
    { model: "gpt-4.1", input: "Hello" },
    { contextLength: CONTEXT, kind: "responses" },
  );
  strictEqual(counted.tokens, 42);
});

test("OpenAIBackend's chat estimate names the package to install, and budget() falls back", async () => {
  // The version the package declares its optional peer at.
  const { peerDependencies } = JSON.parse(
    await readFile(
      new URL(
        "node_modules/@incontext/incontext/package.json",
        import.meta.url,
      ),
      "utf8",
    ),
  );
  const install = `npm install gpt-tokenizer@${
    peerDependencies["gpt-tokenizer"]
  }`;
  const backend = new OpenAIBackend({ cache: null });
  await rejects(
    backend.count(CHAT, { contextLength: CONTEXT }),
    (error) =>
      error instanceof CountError && error.message.endsWith(`(${install})`),
  );
  const result = await budget(CHAT, {
    window: WINDOW,
    contextLength: CONTEXT,
    backend,
  });
  strictEqual(result.action, "set");
  strictEqual(result.source, "rough-fallback");
  ok(result.maxTokens < WINDOW);
  // In the field OpenAI reads for Chat Completions.
  strictEqual(result.request.max_completion_tokens, result.maxTokens);
});
