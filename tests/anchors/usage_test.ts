import {
  deepStrictEqual,
  rejects,
  strictEqual,
  throws,
} from "node:assert/strict";
import {
  readUsage,
  tapFor,
  tapUsage,
  type Usage,
} from "../../src/anchors/usage.ts";
import { captureLogs } from "../_kit/log_capture.ts";

const encoder = new TextEncoder();

function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      const chunk = chunks[next++];
      if (chunk === undefined) controller.close();
      else controller.enqueue(chunk);
    },
  });
}

/** Cuts `data` at each of `cuts` (sorted byte offsets). */
function cut(data: Uint8Array, cuts: number[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const at of [...cuts, data.length]) {
    chunks.push(data.slice(start, at));
    start = at;
  }
  return chunks;
}

async function readAll(
  stream: ReadableStream<Uint8Array>,
): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  while (true) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** Taps `chunks` and returns what came out, chunk by chunk, and every usage reported. */
async function tap(
  chunks: Uint8Array[],
  contentType: string | null,
  maxJsonBytes?: number,
): Promise<{ out: Uint8Array[]; reports: Usage[] }> {
  const reports: Usage[] = [];
  const options = maxJsonBytes === undefined ? {} : { maxJsonBytes };
  const out = await readAll(
    tapUsage(
      streamOf(chunks),
      contentType,
      (usage) => reports.push(usage),
      options,
    ),
  );
  return { out, reports };
}

function sse(events: unknown[], newline = "\n"): string {
  return events.map((event) =>
    `data: ${
      typeof event === "string" ? event : JSON.stringify(event)
    }${newline}${newline}`
  ).join("");
}

const CHAT_JSON = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Grüße, 世界 🙂", refusal: null },
    finish_reason: "stop",
  }],
  usage: {
    prompt_tokens: 21,
    completion_tokens: 7,
    total_tokens: 28,
    prompt_tokens_details: { cached_tokens: 16 },
  },
});

/** A streamed chat completion with `stream_options.include_usage`. */
const CHAT_SSE = sse([
  {
    choices: [{ index: 0, delta: { role: "assistant", content: "" } }],
    usage: null,
  },
  { choices: [{ index: 0, delta: { content: "Grüße 🙂" } }], usage: null },
  {
    choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
    usage: null,
  },
  {
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
  },
  "[DONE]",
]);

Deno.test("tapUsage() yields the bytes of the body in the same chunks", async (t) => {
  const cases: [string, string | null, string][] = [
    ["JSON", "application/json", CHAT_JSON],
    ["SSE", "text/event-stream; charset=utf-8", CHAT_SSE],
    ["another type", "text/plain", CHAT_JSON],
    ["no type", null, CHAT_SSE],
  ];
  for (const [name, type, text] of cases) {
    await t.step(name, async () => {
      const data = bytes(text);
      // Every cut inside a multi-byte character and inside an SSE line.
      const cuts: number[] = [];
      for (let at = 1; at < data.length; at += 3) cuts.push(at);
      const chunks = cut(data, cuts);
      const { out } = await tap(chunks, type);
      deepStrictEqual(out, chunks);
    });
  }
});

Deno.test("tapUsage() reads usage from JSON responses", async (t) => {
  await t.step("chat completions, with cached tokens", async () => {
    const { out, reports } = await tap(
      [bytes(CHAT_JSON)],
      "application/json; charset=utf-8",
    );
    deepStrictEqual(reports, [
      { promptTokens: 21, completionTokens: 7, cachedTokens: 16 },
    ]);
    deepStrictEqual(out, [bytes(CHAT_JSON)]);
  });
  await t.step("completions, split in chunks", async () => {
    const body = bytes(JSON.stringify({
      object: "text_completion",
      choices: [{ text: "ok", index: 0 }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    }));
    const { reports } = await tap(cut(body, [10, 20, 30]), "application/json");
    deepStrictEqual(reports, [{ promptTokens: 5, completionTokens: 1 }]);
  });
  await t.step("Responses, with a +json type", async () => {
    const body = bytes(JSON.stringify({
      object: "response",
      output: [],
      usage: {
        input_tokens: 40,
        output_tokens: 9,
        input_tokens_details: { cached_tokens: 32 },
        total_tokens: 49,
      },
    }));
    const { reports } = await tap([body], "application/vnd.example+json");
    deepStrictEqual(reports, [
      { promptTokens: 40, completionTokens: 9, cachedTokens: 32 },
    ]);
  });
});

Deno.test("tapUsage() reads the final usage chunk of a streamed chat at every split", async () => {
  const expected = [{ promptTokens: 12, completionTokens: 3 }];
  for (const newline of ["\n", "\r\n", "\r"]) {
    const data = bytes(CHAT_SSE.replaceAll("\n", newline));
    for (let at = 0; at <= data.length; at++) {
      const chunks = cut(data, [at]);
      const { out, reports } = await tap(chunks, "text/event-stream");
      deepStrictEqual(reports, expected, `cut at ${at}`);
      deepStrictEqual(out, chunks);
    }
    const single = cut(data, [...data.keys()].slice(1));
    const { out, reports } = await tap(single, "text/event-stream");
    deepStrictEqual(reports, expected);
    deepStrictEqual(out, single);
  }
});

Deno.test("tapUsage() tells a stream's usage at [DONE], before the client reads that chunk", async () => {
  // The upstream's end comes after [DONE]: here, not before the client left.
  const events = CHAT_SSE.split(/(?<=\n\n)/).map(bytes);
  let next = 0;
  const upstream = new ReadableStream<Uint8Array>({
    pull(controller): Promise<void> | void {
      const chunk = events[next++];
      if (chunk === undefined) return new Promise(() => {});
      controller.enqueue(chunk);
    },
  });
  const reports: Usage[] = [];
  const reader = tapUsage(
    upstream,
    "text/event-stream",
    (usage) => reports.push(usage),
  ).getReader();
  const decoder = new TextDecoder();
  let chunk = "";
  while (!chunk.includes("[DONE]")) {
    deepStrictEqual(reports, []);
    chunk = decoder.decode((await reader.read()).value);
  }
  deepStrictEqual(reports, [{ promptTokens: 12, completionTokens: 3 }]);
  // A client that stops at [DONE] closes the stream: told once, as it was.
  await reader.cancel("client done");
  strictEqual(reports.length, 1);
});

Deno.test("tapFor() tells the usage once, at [DONE], and reads nothing after it", () => {
  const reports: Usage[] = [];
  const tap = tapFor("text/event-stream", (usage) => reports.push(usage))!;
  tap.push(bytes(CHAT_SSE));
  deepStrictEqual(reports, [{ promptTokens: 12, completionTokens: 3 }]);
  tap.push(bytes(sse([{ usage: { prompt_tokens: 1, completion_tokens: 1 } }])));
  tap.end();
  deepStrictEqual(reports, [{ promptTokens: 12, completionTokens: 3 }]);
});

Deno.test("tapUsage() reads response.completed of a streamed Responses request", async () => {
  const usage = { input_tokens: 30, output_tokens: 4, total_tokens: 34 };
  const text = [
    "event: response.created",
    `data: ${
      JSON.stringify({ type: "response.created", response: { usage: null } })
    }`,
    "",
    "event: response.output_text.delta",
    `data: ${
      JSON.stringify({ type: "response.output_text.delta", delta: "hi" })
    }`,
    "",
    ": a comment line",
    "event: response.completed",
    `data: ${
      JSON.stringify({ type: "response.completed", response: { usage } })
    }`,
    "",
    "",
  ].join("\n");
  const { reports } = await tap(
    cut(bytes(text), [50, 120]),
    "text/event-stream",
  );
  deepStrictEqual(reports, [{ promptTokens: 30, completionTokens: 4 }]);
});

Deno.test("tapUsage() joins multi-line data and keeps the last usage", async () => {
  const first = { usage: { prompt_tokens: 1, completion_tokens: 1 } };
  const text = `data: ${JSON.stringify(first)}\n\n` +
    'data: {"choices": [],\ndata: "usage": {"prompt_tokens": 8,\n' +
    'data:"completion_tokens": 2}}\n\ndata: [DONE]\n\n';
  for (const newline of ["\n", "\r\n", "\r"]) {
    const data = bytes(text.replaceAll("\n", newline));
    for (let at = 0; at <= data.length; at++) {
      const { reports } = await tap(cut(data, [at]), "text/event-stream");
      deepStrictEqual(reports, [{ promptTokens: 8, completionTokens: 2 }]);
    }
  }
});

Deno.test("tapUsage() does not call onUsage without a usage", async (t) => {
  await t.step("no usage in the body", async () => {
    const body = JSON.stringify({ choices: [], usage: null });
    const { reports } = await tap([bytes(body)], "application/json");
    deepStrictEqual(reports, []);
  });
  await t.step("a stream without include_usage", async () => {
    const text = sse([{ choices: [{ delta: { content: "x" } }] }, "[DONE]"]);
    const { reports } = await tap([bytes(text)], "text/event-stream");
    deepStrictEqual(reports, []);
  });
  await t.step("an event the stream cut before its blank line", async () => {
    const text = `data: ${
      JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 1 } })
    }\n`;
    const { reports } = await tap([bytes(text)], "text/event-stream");
    deepStrictEqual(reports, []);
  });
  await t.step("usage in a body of another type", async () => {
    const { reports } = await tap([bytes(CHAT_JSON)], "text/plain");
    deepStrictEqual(reports, []);
  });
});

Deno.test("tapUsage() passes malformed JSON through without a usage", async () => {
  const data = bytes(CHAT_JSON.slice(0, -1));
  const chunks = cut(data, [7, 99]);
  const { out, reports } = await tap(chunks, "application/json");
  deepStrictEqual(reports, []);
  deepStrictEqual(out, chunks);
});

Deno.test("tapUsage() does not read a JSON body over maxJsonBytes", async () => {
  const data = bytes(CHAT_JSON);
  const chunks = cut(data, [100]);
  const over = await tap(chunks, "application/json", data.length - 1);
  deepStrictEqual(over.reports, []);
  deepStrictEqual(over.out, chunks);
  const within = await tap(chunks, "application/json", data.length);
  strictEqual(within.reports.length, 1);
});

Deno.test("tapUsage() drops an SSE event over maxJsonBytes and reads the next", async () => {
  const big = {
    usage: { prompt_tokens: 99, completion_tokens: 99 },
    pad: "x".repeat(500),
  };
  const small = { usage: { prompt_tokens: 5, completion_tokens: 6 } };
  const text = sse([small]) + sse([big]) + "data: " + "y".repeat(400) +
    "\n\n";
  for (const cuts of [[], [20, 300], [...Array(700).keys()].slice(1)]) {
    const chunks = cut(bytes(text), cuts);
    const { out, reports } = await tap(chunks, "text/event-stream", 200);
    deepStrictEqual(reports, [{ promptTokens: 5, completionTokens: 6 }]);
    deepStrictEqual(out, chunks);
  }
  // A line of the oversized event cut in the middle does not end the event.
  const split = `data: ${"z".repeat(300)}\ndata: ${JSON.stringify(small)}\n\n`;
  for (const cuts of [[], [250], [...Array(split.length).keys()].slice(1)]) {
    const { reports } = await tap(
      cut(bytes(split), cuts),
      "text/event-stream",
      200,
    );
    deepStrictEqual(reports, []);
  }
  // Once the oversized event ends, the next one is read again.
  const after = sse([big, small]);
  for (const cuts of [[], [...Array(after.length).keys()].slice(1)]) {
    const { reports } = await tap(
      cut(bytes(after), cuts),
      "text/event-stream",
      200,
    );
    deepStrictEqual(reports, [{ promptTokens: 5, completionTokens: 6 }]);
  }
});

Deno.test("tapUsage() errors its output when the upstream errors, without onUsage", async () => {
  let sent = false;
  const upstream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent) controller.error(new Error("upstream reset"));
      else controller.enqueue(bytes(CHAT_SSE.slice(0, 40)));
      sent = true;
    },
  });
  const reports: Usage[] = [];
  const reader = tapUsage(
    upstream,
    "text/event-stream",
    (usage) => reports.push(usage),
  ).getReader();
  const first = await reader.read();
  deepStrictEqual(first.value, bytes(CHAT_SSE.slice(0, 40)));
  await rejects(reader.read(), { message: "upstream reset" });
  deepStrictEqual(reports, []);
});

Deno.test("tapUsage() cancels the upstream when the client cancels", async () => {
  let cancelled: (reason: unknown) => void = () => {};
  const reason = new Promise((resolve) => cancelled = resolve);
  const upstream = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(bytes(CHAT_JSON));
    },
    cancel: (why) => cancelled(why),
  });
  const reports: Usage[] = [];
  const reader = tapUsage(
    upstream,
    "application/json",
    (usage) => reports.push(usage),
  ).getReader();
  await reader.read();
  await reader.cancel("client gone");
  strictEqual(await reason, "client gone");
  deepStrictEqual(reports, []);
});

Deno.test("tapUsage() finishes the stream when onUsage throws", async () => {
  await using logs = await captureLogs();
  const chunks = [bytes(CHAT_JSON)];
  const out = await readAll(
    tapUsage(streamOf(chunks), "application/json", () => {
      throw new SyntaxError("a bug in the caller");
    }),
  );
  deepStrictEqual(out, chunks);
  deepStrictEqual(logs.lines.length, 1);
  strictEqual(logs.lines[0]!.includes("SyntaxError"), true);
  strictEqual(logs.lines[0]!.includes("a bug in the caller"), false);
});

Deno.test("tapUsage() rejects invalid arguments", () => {
  for (const maxJsonBytes of [0, -1, 1.5, NaN]) {
    throws(
      () =>
        tapUsage(streamOf([]), "application/json", () => {}, { maxJsonBytes }),
      {
        name: "RangeError",
        message:
          `Cannot read usage as 'maxJsonBytes' must be a positive integer: current value is ${maxJsonBytes}`,
      },
    );
  }
  throws(
    () =>
      tapUsage(
        streamOf([]),
        "application/json",
        undefined as unknown as () => void,
      ),
    { name: "TypeError" },
  );
});

Deno.test("readUsage() reads only non-negative integer counts", async (t) => {
  await t.step("valid shapes", () => {
    deepStrictEqual(
      readUsage({ usage: { prompt_tokens: 0, completion_tokens: 0 } }),
      { promptTokens: 0, completionTokens: 0 },
    );
    deepStrictEqual(
      readUsage({
        type: "response.completed",
        response: { usage: { input_tokens: 3, output_tokens: 2 } },
      }),
      { promptTokens: 3, completionTokens: 2 },
    );
    deepStrictEqual(
      readUsage({
        type: "response.incomplete",
        response: { usage: { input_tokens: 3, output_tokens: 9 } },
      }),
      { promptTokens: 3, completionTokens: 9 },
    );
  });
  await t.step("an invalid cached count is left out", () => {
    deepStrictEqual(
      readUsage({
        usage: {
          prompt_tokens: 4,
          completion_tokens: 1,
          prompt_tokens_details: { cached_tokens: null },
        },
      }),
      { promptTokens: 4, completionTokens: 1 },
    );
  });
  await t.step("invalid counts give no usage", () => {
    const invalid: unknown[] = [
      -1,
      1.5,
      "3",
      null,
      Number.MAX_SAFE_INTEGER + 1,
      Infinity,
    ];
    for (const count of invalid) {
      strictEqual(
        readUsage({ usage: { prompt_tokens: count, completion_tokens: 1 } }),
        undefined,
      );
      strictEqual(
        readUsage({ usage: { input_tokens: 1, output_tokens: count } }),
        undefined,
      );
    }
    for (const value of [null, [], "usage", { usage: [] }, {}]) {
      strictEqual(readUsage(value), undefined);
    }
  });
});
