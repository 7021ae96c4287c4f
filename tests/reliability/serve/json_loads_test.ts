/**
 * `incontext serve` reads a body as vLLM reads it, with Python's
 * `json.loads` on bytes, and the upstream reads what it would read without
 * the proxy. The bodies come from Python's http.client as Python programs
 * write them (`json.dumps` writes NaN and the infinities as `NaN`,
 * `Infinity` and `-Infinity`; a string holding surrogates alone is encoded
 * with `surrogatepass`). The proxy counts them with `incontext
 * tokenize-server` (vLLM's /tokenize) and, in a second process, with the
 * local engine; the upstream records the bytes it is sent, and
 * /usr/bin/python3 reads them against the bytes the client sent.
 */
import { ok, strictEqual } from "node:assert/strict";
import { dirname } from "node:path";
import { python, startTokenizeServer, stillServes } from "./_process.ts";
import { type SpawnedProxy, spawnProxy } from "../_proxy_spawn.ts";
import { MODEL_FILES } from "../../_kit/model_files.ts";

const QWEN3 = dirname(
  MODEL_FILES.find((model) => model.family === "qwen3")!.tokenizerPath,
);
const LENGTHS = {
  INCONTEXT_CONTEXT_LENGTH: "32768",
  INCONTEXT_COMPRESSION_WINDOW_TOKENS: "30000",
};

/** The bodies, as Python programs write them; the client sends `sys.argv[2]`. */
const CLIENT = `
import http.client, json, sys

def chat(**fields):
    return {"model": "m", "max_tokens": 100000,
            "messages": [{"role": "user", "content": "hello"}], **fields}

def tools(low, high):
    schema = {"type": "number", "minimum": low, "maximum": high}
    return [{"type": "function", "function": {"name": "pick", "parameters": {
        "type": "object", "properties": {"x": schema}}}}]

def said(text):
    return [{"role": "user", "content": text}]

inf, nan = float("inf"), float("nan")
loose = lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
bodies = {
    "temperature NaN": json.dumps(chat(temperature=nan)).encode(),
    "tool bounds Infinity and -Infinity": json.dumps(chat(tools=tools(-inf, inf))).encode(),
    "tool bounds null": json.dumps(chat(tools=tools(None, None))).encode(),
    "logit_bias -Infinity": json.dumps(chat(logit_bias={"7": -inf})).encode(),
    "max_tokens NaN": json.dumps(chat(max_tokens=nan)).encode(),
    "max_tokens Infinity": json.dumps(chat(max_tokens=inf)).encode(),
    "an escaped lone surrogate": json.dumps(chat(messages=said("a\\ud800b"))).encode(),
    "a pair as two surrogates in UTF-8": loose(chat(messages=said("a\\ud83d\\ude00b"))),
    "a lone surrogate in UTF-8 under a cap that fits": loose(chat(messages=said("a\\udfff"), max_tokens=50)),
    "a lone surrogate in UTF-16": json.dumps(chat(messages=said("a\\ud800")), ensure_ascii=False).encode("utf-16", "surrogatepass"),
    "nan": b'{"model": "m", "messages": [], "temperature": nan}',
    "-NaN": b'{"model": "m", "messages": [], "temperature": -NaN}',
    "a surrogate cut short": b'{"model": "m", "messages": [{"role": "user", "content": "\\xed\\xa0"}]}',
}
body = bodies[sys.argv[2]]
try:
    json.loads(body)
    python = "ok"
except Exception as error:
    python = type(error).__name__
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
conn.request("POST", "/v1/chat/completions", body=body,
             headers={"content-type": "application/json"})
response = conn.getresponse()
answer = response.read().decode()
print(json.dumps({
    "status": response.status,
    "headers": {k.lower(): v for k, v in response.getheaders()
                if k.lower().startswith("x-incontext-")},
    "sent": body.hex(),
    "python": python,
    "answer": answer,
}))
`;

/** Whether Python reads `received` as `sent` with `max_tokens` set to `cap`. */
const SAME = `
import json, sys
sent = json.loads(bytes.fromhex(sys.argv[1]))
sent["max_tokens"] = int(sys.argv[3])
received = json.loads(bytes.fromhex(sys.argv[2]))
# The cap is written last: compare regardless of key order (NaN only in text).
print(json.dumps(received, sort_keys=True) == json.dumps(sent, sort_keys=True))
`;

interface Sent {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The body the client sent, in hex. */
  readonly sent: string;
  /** "ok", or the exception Python's json.loads raises on the body. */
  readonly python: string;
  readonly answer: string;
}

/** What the upstream vLLM would be: it records each body's bytes. */
function recordingUpstream() {
  const received: string[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, async (request) => {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (request.method !== "POST") return new Response(null, { status: 404 });
    received.push(
      Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
    );
    return Response.json({
      object: "chat.completion",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "Noted: 1 messages." },
        finish_reason: "stop",
      }],
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

async function send(proxy: SpawnedProxy, name: string): Promise<Sent> {
  const ran = await python(CLIENT, [String(proxy.port), name]);
  strictEqual(ran.code, 0, ran.stderr);
  return JSON.parse(ran.stdout);
}

async function readAlike(sent: string, received: string, cap: string) {
  const ran = await python(SAME, [sent, received, cap]);
  strictEqual(ran.stderr, "");
  return ran.stdout.trim() === "True";
}

Deno.test("incontext serve reads bodies as json.loads reads them, and sends what the upstream would read", async (t) => {
  await using upstream = recordingUpstream();
  await using tokenizer = await startTokenizeServer();
  await using viaTokenize = await spawnProxy(upstream.url, {
    INCONTEXT_TOKENIZER_URL: `${tokenizer.url}/tokenize`,
    ...LENGTHS,
  });
  await using viaLocal = await spawnProxy(upstream.url, {
    INCONTEXT_BACKEND: "local",
    INCONTEXT_TOKENIZER_DIR: QWEN3,
    ...LENGTHS,
  });
  const proxies = [["tokenize-server", viaTokenize], [
    "local engine",
    viaLocal,
  ]] as const;

  /** The case through both proxies: the same answer, the body as received each time. */
  async function through(name: string) {
    const seen: { sent: Sent; received: string | undefined }[] = [];
    for (const [, proxy] of proxies) {
      const before = upstream.received.length;
      const sent = await send(proxy, name);
      seen.push({ sent, received: upstream.received.slice(before).at(-1) });
    }
    const [first, second] = seen;
    strictEqual(first!.sent.status, second!.sent.status);
    strictEqual(
      first!.sent.headers["x-incontext-prompt-tokens"],
      second!.sent.headers["x-incontext-prompt-tokens"],
      `${name}: /tokenize and the local engine count alike`,
    );
    return seen;
  }

  const budgeted = [
    "temperature NaN",
    "tool bounds Infinity and -Infinity",
    "logit_bias -Infinity",
    "an escaped lone surrogate",
  ];
  for (const name of budgeted) {
    await t.step(`${name}: budgeted, and read upstream as sent`, async () => {
      for (const { sent, received } of await through(name)) {
        strictEqual(sent.python, "ok");
        strictEqual(sent.status, 200, sent.answer);
        strictEqual(sent.headers["x-incontext-action"], "set");
        const cap = sent.headers["x-incontext-max-tokens"]!;
        ok(Number(cap) < 100000, cap);
        ok(received !== undefined);
        strictEqual(await readAlike(sent.sent, received, cap), true, received);
      }
      await stillServes(viaTokenize);
      await stillServes(viaLocal);
    });
  }

  await t.step("the infinities are counted, not written as null", async () => {
    // Both proxies count alike only if /tokenize was sent the infinities:
    // as null, the tool renders to another number of tokens.
    const [infinite] = await through("tool bounds Infinity and -Infinity");
    const [nulls] = await through("tool bounds null");
    const tokens = (seen: { sent: Sent } | undefined) =>
      Number(seen!.sent.headers["x-incontext-prompt-tokens"]);
    ok(tokens(infinite) > 0 && tokens(nulls) > 0);
    ok(tokens(infinite) !== tokens(nulls), `${tokens(infinite)} tokens both`);
    await stillServes(viaTokenize);
    await stillServes(viaLocal);
  });

  const asSent: [string, RegExp][] = [
    ["max_tokens NaN", /'max_tokens' is not a positive integer/],
    ["max_tokens Infinity", /'max_tokens' is not a positive integer/],
    ["a pair as two surrogates in UTF-8", /surrogates/],
    ["a lone surrogate in UTF-16", /surrogates/],
  ];
  for (const [name, reason] of asSent) {
    await t.step(`${name}: forwarded byte for byte, and says why`, async () => {
      for (const { sent, received } of await through(name)) {
        strictEqual(sent.python, "ok");
        strictEqual(sent.status, 200, sent.answer);
        strictEqual(sent.headers["x-incontext-action"], "unchanged");
        ok(reason.test(sent.headers["x-incontext-reason"] ?? ""), sent.answer);
        strictEqual(received, sent.sent);
      }
      await stillServes(viaTokenize);
      await stillServes(viaLocal);
    });
  }

  await t.step(
    "a lone surrogate in UTF-8 under a cap that fits: budgeted, byte for byte",
    async () => {
      const name = "a lone surrogate in UTF-8 under a cap that fits";
      for (const { sent, received } of await through(name)) {
        strictEqual(sent.status, 200, sent.answer);
        ok(Number(sent.headers["x-incontext-prompt-tokens"]) > 0);
        strictEqual(received, sent.sent);
      }
      await stillServes(viaTokenize);
      await stillServes(viaLocal);
    },
  );

  for (const name of ["nan", "-NaN", "a surrogate cut short"]) {
    await t.step(
      `${name}: refused by json.loads, so 400 invalid_json`,
      async () => {
        for (const { sent, received } of await through(name)) {
          ok(sent.python !== "ok", sent.python);
          strictEqual(sent.status, 400);
          strictEqual(JSON.parse(sent.answer).error.code, "invalid_json");
          strictEqual(received, undefined);
        }
        await stillServes(viaTokenize);
        await stillServes(viaLocal);
      },
    );
  }
});
