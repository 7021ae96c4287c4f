import { deepStrictEqual } from "node:assert/strict";
import { mistralChatBody } from "../../../packages/engine/src/vllm/mistral.ts";

Deno.test("mistralChatBody() cuts ids over 9 characters to their last 9, as vLLM's truncate_tool_call_ids", () => {
  const body = {
    model: "m",
    messages: [
      {
        role: "assistant",
        tool_calls: [
          { id: "call_abcdefghijkl", type: "function" },
          { id: "123456789", type: "function" },
          { id: "ab😀cdefghij", type: "function" },
        ],
      },
      { role: "tool", tool_call_id: "toolu_0123456789", content: "x" },
      { role: "tool_results", tool_call_id: "0123456789" },
      { role: "user", content: "u", tool_call_id: "0123456789" },
    ],
  };
  const before = structuredClone(body);
  deepStrictEqual(mistralChatBody(body), {
    model: "m",
    messages: [
      {
        role: "assistant",
        tool_calls: [
          { id: "defghijkl", type: "function" },
          { id: "123456789", type: "function" },
          // Python's len() counts code points.
          { id: "😀cdefghij", type: "function" },
        ],
      },
      { role: "tool", tool_call_id: "123456789", content: "x" },
      { role: "tool_results", tool_call_id: "123456789" },
      { role: "user", content: "u", tool_call_id: "0123456789" },
    ],
  });
  deepStrictEqual(body, before);
});

Deno.test("mistralChatBody() gives every assistant message a tool_calls list, as vLLM's maybe_serialize_tool_calls", () => {
  deepStrictEqual(
    mistralChatBody({
      messages: [
        { role: "assistant", content: "a" },
        { role: "assistant", content: "b", tool_calls: null },
      ],
    }).messages,
    [
      { role: "assistant", content: "a", tool_calls: [] },
      { role: "assistant", content: "b", tool_calls: [] },
    ],
  );
});
