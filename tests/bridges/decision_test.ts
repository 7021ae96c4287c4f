// Covers: src/bridges/decision.ts, src/bridges/number_safety.ts
//
// decide() on the bodies Python's json.loads reads and JSON.parse does not:
// what it sends is checked against /usr/bin/python3, which reads the sent
// body as the original with only its cap changed.
import { ok, strictEqual } from "node:assert/strict";
import { decide } from "../../src/bridges/decision.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

const encoder = new TextEncoder();

function decideOn(bytes: Uint8Array) {
  return decide(bytes, {
    kind: "chat",
    bridge: {
      window: 55705,
      contextLength: 65536,
      backend: new FakeBackend({ count: 5 }),
    },
  });
}

/** Whether Python reads `sent` as `original` with `max_tokens` set to `cap`. */
async function pythonReadsAlike(
  original: Uint8Array,
  sent: string,
  cap: number,
): Promise<boolean> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      `import json, sys
original = json.loads(bytes.fromhex(sys.argv[1]))
original["max_tokens"] = int(sys.argv[3])
sent = json.loads(bytes.fromhex(sys.argv[2]))
# Key order aside (the cap is written last): NaN == NaN only in text.
print(json.dumps(sent, sort_keys=True) == json.dumps(original, sort_keys=True))`,
      Array.from(original, (b) => b.toString(16).padStart(2, "0")).join(""),
      Array.from(encoder.encode(sent), (b) => b.toString(16).padStart(2, "0"))
        .join(""),
      String(cap),
    ],
    stdout: "piped",
    stderr: "piped",
  });
  const { stdout, stderr } = await child.output();
  const answer = new TextDecoder().decode(stdout).trim();
  ok(answer === "True" || answer === "False", new TextDecoder().decode(stderr));
  return answer === "True";
}

Deno.test("decide() budgets a body with NaN and the infinities, and writes them as they came", async () => {
  const bytes = encoder.encode(
    '{"model": "m", "max_tokens": 65536, "temperature": NaN, ' +
      '"logit_bias": {"7": -Infinity}, "tools": [{"type": "function", ' +
      '"function": {"name": "f", "parameters": {"maximum": Infinity}}}], ' +
      '"messages": [{"role": "user", "content": "NaN Infinity"}]}',
  );
  const decision = await decideOn(bytes);
  strictEqual(decision.kind, "send");
  if (decision.kind !== "send") return;
  strictEqual(decision.result.action, "set");
  ok(decision.body !== undefined);
  ok(Number.isNaN(decision.sent.temperature));
  strictEqual(
    await pythonReadsAlike(bytes, decision.body, decision.maxTokens!),
    true,
    decision.body,
  );
});

Deno.test("decide() leaves a body with NaN as it came when a number cannot be written again", async () => {
  const bytes = encoder.encode(
    '{"max_tokens": 65536, "seed": 12345678901234567890, "temperature": NaN, "messages": []}',
  );
  const decision = await decideOn(bytes);
  strictEqual(decision.kind === "send" && decision.body, undefined);
  strictEqual(decision.kind === "send" && decision.result.action, "unchanged");
});

Deno.test("decide() sends a body that spells surrogates alone in its bytes as it came", async (t) => {
  const withSurrogates = (cap: number) =>
    new Uint8Array([
      ...encoder.encode(
        `{"max_tokens": ${cap}, "messages": [{"role": "user", "content": "`,
      ),
      // U+1F600 as two surrogates: Python reads two code points, a
      // JavaScript string one character.
      ...[0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80],
      ...encoder.encode('"}]}'),
    ]);

  await t.step("a cap to lower: unbudgeted, and says why", async () => {
    const decision = await decideOn(withSurrogates(65536));
    strictEqual(decision.kind, "send");
    if (decision.kind !== "send") return;
    strictEqual(decision.body, undefined);
    strictEqual(decision.result.action, "unchanged");
    const reason = decision.headers.find(([name]) =>
      name === "x-incontext-reason"
    )?.[1];
    ok(reason?.includes("surrogates"), reason);
  });

  await t.step(
    "a cap within the budget: budgeted, its bytes as they came",
    async () => {
      const decision = await decideOn(withSurrogates(100));
      strictEqual(decision.kind, "send");
      if (decision.kind !== "send") return;
      strictEqual(decision.body, undefined);
      strictEqual(decision.result.promptTokens, 5);
    },
  );

  await t.step(
    "an escaped lone surrogate is written again as Python reads it",
    async () => {
      const bytes = encoder.encode(
        '{"max_tokens": 65536, "messages": [{"role": "user", "content": "a\\ud800b\\ud83d\\ude00"}]}',
      );
      const decision = await decideOn(bytes);
      strictEqual(decision.kind === "send" && decision.result.action, "set");
      if (decision.kind !== "send") return;
      strictEqual(
        await pythonReadsAlike(bytes, decision.body!, decision.maxTokens!),
        true,
      );
    },
  );
});

Deno.test("decide() refuses what Python's json.loads refuses", async () => {
  const cases: [Uint8Array, RegExp][] = [
    [encoder.encode('{"a": nan, "messages": []}'), /not valid JSON/],
    [encoder.encode('{"a": -NaN, "messages": []}'), /not valid JSON/],
    [encoder.encode('{"a": [1NaN], "messages": []}'), /not valid JSON/],
    [encoder.encode("NaN"), /not a JSON object/],
    [new Uint8Array([0x7b, 0x22, 0xed, 0xa0, 0x22, 0x7d]), /not valid UTF-8/],
  ];
  for (const [bytes, reason] of cases) {
    const decision = await decideOn(bytes);
    strictEqual(decision.kind, "malformed");
    ok(decision.kind === "malformed" && reason.test(decision.reason));
  }
});
