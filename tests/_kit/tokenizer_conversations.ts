/**
 * Conversations rendered with each family's chat template for the tokenizer
 * exactness test, already in the shape vLLM hands to templates.
 *
 * @module
 */

/** A tool definition, as a chat request lists it. */
export const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the weather for a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city"],
    },
  },
};

/** Template contexts: messages, and tools for the templates that use them. */
export const CONVERSATIONS: readonly Record<string, unknown>[] = [
  { messages: [{ role: "user", content: "Hello!" }] },
  {
    messages: [
      { role: "system", content: "You are a helpful assistant.\n\nBe brief." },
      { role: "user", content: "写一首关于秋天的短诗。" },
      { role: "assistant", content: "秋风起，落叶黄。🍂" },
      {
        role: "user",
        content:
          "Now in English, with emoji 👩‍💻 and code:\n```py\nprint(1)\n```",
      },
    ],
  },
  {
    messages: [
      { role: "user", content: "  spaces   and\ttabs\r\nand CRLF  \n\n\n" },
      { role: "assistant", content: "Noted.          Really." },
      { role: "user", content: "<|im_start|> is just text here <|im_end|>" },
    ],
  },
  {
    tools: [WEATHER_TOOL],
    messages: [
      { role: "system", content: "Use tools when needed." },
      { role: "user", content: "Weather in Paris and 東京 for 3 days?" },
      {
        role: "assistant",
        content: "",
        reasoning_content: "Two cities, so two calls.",
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: {
              name: "get_weather",
              arguments: { city: "Paris", days: 3 },
            },
          },
          {
            id: "call_2",
            type: "function",
            function: {
              name: "get_weather",
              arguments: { city: "東京", days: 3 },
            },
          },
        ],
      },
      {
        role: "tool",
        tool_call_id: "call_1",
        content: '{"temp": 11.5, "sky": "rain"}',
      },
      {
        role: "tool",
        tool_call_id: "call_2",
        content: '{"temp": 14.0, "sky": "sun"}',
      },
      {
        role: "assistant",
        content: "Paris: 11.5 °C, rain. 東京: 14 °C, sun ☀️.",
      },
      { role: "user", content: "Thanks!" },
    ],
  },
];
