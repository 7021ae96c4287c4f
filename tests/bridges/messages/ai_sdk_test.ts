import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { aiSdkToChat } from "../../../src/bridges/messages/ai_sdk.ts";
import { AI_SDK_HISTORY, sentByAiSdk } from "../../_kit/sdk_conversations.ts";

Deno.test("aiSdkToChat() writes the chat messages the AI SDK's OpenAI-compatible provider sends", async () => {
  const sent = await sentByAiSdk("Be brief.", AI_SDK_HISTORY);
  const converted = aiSdkToChat(AI_SDK_HISTORY);
  deepStrictEqual(
    [{ role: "system", content: "Be brief." }, ...converted.messages],
    sent.messages,
  );
  strictEqual(converted.inexact, undefined);
});

Deno.test("aiSdkToChat() says when media parts are counted from a stand-in", () => {
  const converted = aiSdkToChat([{
    role: "user",
    content: [
      { type: "text", text: "What is this?" },
      { type: "image", image: "https://example.test/cat.png" },
    ],
  }]);
  deepStrictEqual(converted.messages, [{
    role: "user",
    content: [
      { type: "text", text: "What is this?" },
      { type: "image_url", image_url: { url: "https://example.test/cat.png" } },
    ],
  }]);
  strictEqual(typeof converted.inexact, "string");
});
