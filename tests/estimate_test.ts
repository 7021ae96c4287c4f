import { strictEqual } from "node:assert/strict";
import { estimateTextTokens, roughEstimate } from "../mod.ts";

Deno.test("estimateTextTokens() follows Hermes' rules", () => {
  strictEqual(estimateTextTokens(""), 0);
  strictEqual(estimateTextTokens("abcd"), 1);
  strictEqual(estimateTextTokens("abcde"), 2);
  strictEqual(estimateTextTokens("日本語"), 3); // CJK: one each
  strictEqual(estimateTextTokens("한국어"), 3); // Hangul syllables
  strictEqual(estimateTextTokens("ｱ"), 1); // halfwidth forms U+FF00-FFEF
  strictEqual(estimateTextTokens("é"), 1); // 2 UTF-8 bytes
  strictEqual(estimateTextTokens("éééé"), 2); // 8 bytes
  strictEqual(estimateTextTokens("日本 abc"), 2 + 1); // rest " abc" = 4 bytes
  strictEqual(estimateTextTokens("😀"), 1); // 4 bytes, not CJK
});

Deno.test("roughEstimate() counts text, images and tools", async (t) => {
  await t.step("message text, parts, reasoning and tool calls", () => {
    const request = {
      messages: [
        { role: "system", content: "abcd" },
        {
          role: "user",
          content: [{ type: "text", text: "efgh" }, {
            type: "image_url",
            image_url: { url: "x" },
          }],
        },
        {
          role: "assistant",
          content: null,
          reasoning_content: "ijkl",
          tool_calls: [{
            type: "function",
            function: { name: "mnop", arguments: "{}" },
          }],
        },
      ],
    };
    strictEqual(
      roughEstimate(request),
      Math.ceil("abcdefghijklmnop{}".length / 4) + 1500,
    );
  });
  await t.step(
    "tools by name, description and compact JSON of parameters",
    () => {
      const parameters = {
        type: "object",
        properties: { q: { type: "string" } },
      };
      const request = {
        messages: [],
        tools: [{
          type: "function",
          function: { name: "search", description: "Find things", parameters },
        }],
      };
      const text = "search" + "Find things" + JSON.stringify(parameters);
      strictEqual(roughEstimate(request), Math.ceil(text.length / 4));
    },
  );
  await t.step("extra_body messages win", () => {
    strictEqual(
      roughEstimate({
        messages: [{ content: "a".repeat(40) }],
        extra_body: { messages: [] },
      }),
      0,
    );
  });
  await t.step("ignores malformed parts without throwing", () => {
    strictEqual(
      roughEstimate({
        messages: [null, 3, { content: [null, 7] }, { tool_calls: [null] }],
        tools: [null],
      }),
      0,
    );
  });
});
