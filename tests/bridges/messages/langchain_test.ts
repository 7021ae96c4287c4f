import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { HumanMessage } from "@langchain/core/messages";
import { langchainToChat } from "../../../src/bridges/messages/langchain.ts";
import {
  langchainHistory,
  sentByLangChain,
} from "../../_kit/sdk_conversations.ts";

Deno.test("langchainToChat() writes the chat messages ChatOpenAI sends", async () => {
  const history = langchainHistory();
  const sent = await sentByLangChain(history);
  const converted = langchainToChat(history);
  deepStrictEqual(converted.messages, sent.messages);
  strictEqual(converted.inexact, undefined);
});

Deno.test("langchainToChat() says when media blocks are counted from a stand-in", () => {
  const converted = langchainToChat([
    new HumanMessage({
      content: [{
        type: "image",
        url: "https://example.test/cat.png",
      }],
    }),
  ]);
  strictEqual(typeof converted.inexact, "string");
});
