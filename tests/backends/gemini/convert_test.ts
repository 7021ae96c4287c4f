import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { JsonObject } from "../../../src/core/backend.ts";
import { CountError } from "../../../src/core/errors.ts";
import {
  geminiModelName,
  toGeminiCount,
} from "../../../src/backends/gemini/convert.ts";
import { geminiRequestProblem } from "../../../src/testing/gemini_rules.ts";
import * as kit from "../../_kit/backend_kit.ts";

const call = kit.toolCall;

const CASES: readonly kit.ConversionCase[] = [
  {
    name: "system messages become the systemInstruction; assistant is model",
    request: {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Use SI." }] },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello" },
      ],
    },
    expected: {
      contents: [
        { role: "user", parts: [{ text: "Hi" }] },
        { role: "model", parts: [{ text: "Hello" }] },
      ],
      systemInstruction: {
        parts: [{ text: "Be brief." }, { text: "Use SI." }],
      },
    },
  },
  {
    name:
      "tool calls become functionCall parts, results functionResponse parts in one turn",
    request: {
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            call("t1", "weather", '{"city":"Paris"}'),
            call("t2", "weather", { city: "Rome" }),
          ],
        },
        { role: "tool", tool_call_id: "t1", content: '{"sky":"sunny"}' },
        { role: "tool", tool_call_id: "t2", content: "Rain" },
        { role: "assistant", content: "Sunny in Paris, rain in Rome." },
      ],
    },
    expected: {
      contents: [
        { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] },
        {
          role: "model",
          parts: [
            { functionCall: { name: "weather", args: { city: "Paris" } } },
            { functionCall: { name: "weather", args: { city: "Rome" } } },
          ],
        },
        {
          role: "user",
          parts: [
            {
              functionResponse: { name: "weather", response: { sky: "sunny" } },
            },
            {
              functionResponse: {
                name: "weather",
                response: { content: "Rain" },
              },
            },
          ],
        },
        {
          role: "model",
          parts: [{ text: "Sunny in Paris, rain in Rome." }],
        },
      ],
    },
  },
  {
    name:
      "function tools become functionDeclarations; tool_choice a toolConfig",
    request: {
      messages: [{ role: "user", content: "Hi" }],
      tools: [
        {
          type: "function",
          function: {
            name: "search",
            description: "Find",
            parameters: {
              type: "object",
              properties: { q: { type: "string" } },
              additionalProperties: false,
            },
          },
        },
        { type: "function", function: { name: "now" } },
      ],
      tool_choice: { type: "function", function: { name: "search" } },
    },
    expected: {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      tools: [{
        functionDeclarations: [
          {
            name: "search",
            description: "Find",
            parametersJsonSchema: {
              type: "object",
              properties: { q: { type: "string" } },
              additionalProperties: false,
            },
          },
          { name: "now" },
        ],
      }],
      toolConfig: {
        functionCallingConfig: {
          mode: "ANY",
          allowedFunctionNames: ["search"],
        },
      },
    },
  },
  {
    name: "a data URL image becomes inlineData; consecutive users merge",
    request: {
      messages: [
        { role: "user", content: "Look:" },
        {
          role: "user",
          content: [{
            type: "image_url",
            image_url: { url: "data:image/jpeg;base64,/9j/4A==" },
          }],
        },
      ],
    },
    expected: {
      contents: [{
        role: "user",
        parts: [
          { text: "Look:" },
          { inlineData: { mimeType: "image/jpeg", data: "/9j/4A==" } },
        ],
      }],
    },
  },
  {
    name: "Gemini-shaped requests pass, camelCased, without the output cap",
    request: {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      system_instruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "f" }] }],
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
      generationConfig: {
        maxOutputTokens: 100,
        responseMimeType: "text/plain",
      },
      safetySettings: [],
      cachedContent: "cachedContents/abc",
    },
    expected: {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "f" }] }],
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
      cachedContent: "cachedContents/abc",
      generationConfig: { responseMimeType: "text/plain" },
    },
  },
];

Deno.test("toGeminiCount() builds the generateContentRequest", async (t) => {
  for (const { name, request, expected } of CASES) {
    await t.step(name, () => {
      const body = toGeminiCount(request, "gemini-2.5-flash");
      deepStrictEqual(body, {
        generateContentRequest: {
          model: "models/gemini-2.5-flash",
          ...expected,
        },
      });
      // The real API (as the fake checks it) accepts every conversion.
      strictEqual(geminiRequestProblem(body), undefined);
    });
  }
});

Deno.test("toGeminiCount() maps tool_choice strings", async (t) => {
  const table: [string, string][] = [
    ["auto", "AUTO"],
    ["required", "ANY"],
    ["none", "NONE"],
  ];
  for (const [choice, mode] of table) {
    await t.step(choice, () => {
      const body = toGeminiCount({
        messages: [{ role: "user", content: "Hi" }],
        tools: [{ type: "function", function: { name: "f" } }],
        tool_choice: choice,
      }, "m");
      const inner = body.generateContentRequest as JsonObject;
      deepStrictEqual(inner.toolConfig, { functionCallingConfig: { mode } });
    });
  }
});

Deno.test("toGeminiCount() refuses what has no faithful Gemini form", async (t) => {
  const table: [string, JsonObject][] = [
    ["no messages array", { messages: "Hi" }],
    [
      "a remote image URL",
      {
        messages: [{
          role: "user",
          content: [{
            type: "image_url",
            image_url: { url: "https://x/a.png" },
          }],
        }],
      },
    ],
    [
      "unparsable tool arguments",
      { messages: [{ role: "assistant", tool_calls: [call("t", "f", "{")] }] },
    ],
    [
      "a tool result answering no call",
      { messages: [{ role: "tool", tool_call_id: "t9", content: "x" }] },
    ],
    [
      "a built-in tool in an OpenAI request",
      { messages: [], tools: [{ type: "web_search" }] },
    ],
    [
      "an unknown role",
      { messages: [{ role: "function", content: "x" }] },
    ],
  ];
  for (const [name, request] of table) {
    await t.step(name, () => {
      throws(() => toGeminiCount(request, "m"), CountError);
    });
  }
});

Deno.test("geminiModelName() keeps model names to one path segment", async (t) => {
  await t.step("a request's model, without models/", () => {
    strictEqual(
      geminiModelName({ model: "models/gemini-2.5-pro" }, "x"),
      "gemini-2.5-pro",
    );
    strictEqual(geminiModelName({}, "gemini-2.5-flash"), "gemini-2.5-flash");
  });
  for (
    const bad of ["", "a/b", "..", "models/../x", "a\\b", "tunedModels/..%2F"]
  ) {
    await t.step(`refuses ${JSON.stringify(bad)}`, () => {
      throws(() => geminiModelName({ model: bad }, "ok"), CountError);
    });
  }
  await t.step("refuses a request with no model and no default", () => {
    throws(() => geminiModelName({}, undefined), CountError);
  });
});

Deno.test("toGeminiCount() never mutates the request", () => {
  const request = structuredClone(CASES[1]!.request);
  const copy = structuredClone(request);
  toGeminiCount(request, "m");
  deepStrictEqual(request, copy);
});
