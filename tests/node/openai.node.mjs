// The Node proof's install with the OpenAI backend's optional peer: after
// `prove.ts` adds `gpt-tokenizer` to the install of `without_peers.node.mjs`,
// as a user of that backend does, it runs this file there with `node --test`.
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { deepStrictEqual } from "node:assert/strict";
import { OpenAIBackend } from "@incontext/incontext/openai";

const cookbook = JSON.parse(
  await readFile(new URL("openai_cookbook.json", import.meta.url), "utf8"),
);

test("OpenAIBackend estimates chat requests with gpt-tokenizer as under Deno", async () => {
  // The figures OpenAI's API gave the cookbook, which the Deno tests hold
  // the estimate to (tests/backends/openai/openai_backend_test.ts).
  const backend = new OpenAIBackend({ cache: null });
  const options = { contextLength: 128000 };
  deepStrictEqual(
    await backend.count(
      { model: "gpt-4o", messages: cookbook.messages },
      options,
    ),
    { tokens: 124, estimatedTokens: 124, source: "openai-o200k-estimate" },
  );
  deepStrictEqual(
    await backend.count(
      { model: "gpt-4", messages: cookbook.messages },
      options,
    ),
    { tokens: 129, estimatedTokens: 129, source: "openai-cl100k-estimate" },
  );
});
