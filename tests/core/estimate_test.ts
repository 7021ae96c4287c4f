import { strictEqual } from "node:assert/strict";
import { estimateTextTokens, roughEstimate } from "../../mod.ts";

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

Deno.test("roughEstimate() reads Anthropic Messages requests", async (t) => {
  await t.step("a system string, or its text blocks", () => {
    strictEqual(roughEstimate({ system: "abcd", messages: [] }), 1);
    strictEqual(
      roughEstimate({
        system: [{ type: "text", text: "abcd" }, {
          type: "text",
          text: "efgh",
        }],
        messages: [],
      }),
      2,
    );
  });
  await t.step("tool_use input, tool_result content and thinking", () => {
    const input = { city: "Paris" };
    const request = {
      messages: [
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "abcd", signature: "sig" },
            { type: "tool_use", id: "t1", name: "weather", input },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "Sunny" },
            {
              type: "tool_result",
              tool_use_id: "t2",
              content: [{ type: "text", text: "Rain" }, {
                type: "image",
                source: { type: "base64", media_type: "image/png", data: "" },
              }],
            },
          ],
        },
      ],
    };
    const text = "abcd" + "weather" + JSON.stringify(input) + "Sunny" + "Rain";
    strictEqual(roughEstimate(request), Math.ceil(text.length / 4) + 1500);
  });
  await t.step("tools by name, description and input_schema", () => {
    const schema = { type: "object", properties: { q: { type: "string" } } };
    const request = {
      messages: [],
      tools: [{ name: "search", description: "Find", input_schema: schema }],
    };
    const text = "search" + "Find" + JSON.stringify(schema);
    strictEqual(roughEstimate(request), Math.ceil(text.length / 4));
  });
});

Deno.test("roughEstimate() reads Gemini requests", async (t) => {
  await t.step("parts: text, calls, responses and inline images", () => {
    const args = { city: "Paris" };
    const response = { sky: "sunny" };
    const request = {
      systemInstruction: { parts: [{ text: "abcd" }] },
      contents: [
        { role: "user", parts: [{ text: "efgh" }] },
        { role: "model", parts: [{ functionCall: { name: "weather", args } }] },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "weather", response } },
            { inlineData: { mimeType: "image/png", data: "" } },
          ],
        },
      ],
    };
    const text = "abcd" + "efgh" + "weather" + JSON.stringify(args) +
      "weather" + JSON.stringify(response);
    strictEqual(roughEstimate(request), Math.ceil(text.length / 4) + 1500);
  });
  await t.step("snake_case spellings", () => {
    strictEqual(
      roughEstimate({
        system_instruction: { parts: [{ text: "abcd" }] },
        contents: [{ parts: [{ function_call: { name: "efgh" } }] }],
      }),
      2,
    );
  });
  await t.step("functionDeclarations by name, description and schema", () => {
    const parameters = { type: "object" };
    const schema = { type: "object", properties: {} };
    const request = {
      contents: [],
      tools: [{
        functionDeclarations: [
          { name: "search", description: "Find", parameters },
          { name: "now", parametersJsonSchema: schema },
        ],
      }],
    };
    const text = "search" + "Find" + JSON.stringify(parameters) + "now" +
      JSON.stringify(schema);
    strictEqual(roughEstimate(request), Math.ceil(text.length / 4));
  });
  await t.step("malformed parts are ignored without throwing", () => {
    strictEqual(
      roughEstimate({
        systemInstruction: 7,
        contents: [null, { parts: "x" }, {
          parts: [null, { functionCall: 3 }],
        }],
        tools: [{ functionDeclarations: [null] }],
      }),
      0,
    );
  });
});

Deno.test("roughEstimate() keeps OpenAI tool parameters of null", () => {
  const request = {
    messages: [],
    tools: [{ type: "function", function: { name: "abcd", parameters: null } }],
  };
  strictEqual(roughEstimate(request), Math.ceil("abcdnull".length / 4));
});
