// Covers: src/_internal/json_bytes.ts, src/bridges/decision.ts
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { jsonEncoding, jsonText } from "../../src/_internal/json_bytes.ts";
import { decide } from "../../src/bridges/decision.ts";
import { FakeBackend } from "../../src/testing/mod.ts";

const BODY = '{"messages": [{"role": "user", "content": "h\u00e9 \u{1F600}"}]}';

/** `text` in `encoding`, with a byte order mark when `bom`. */
function encoded(text: string, encoding: string, bom: boolean): Uint8Array {
  const points = [...(bom ? "\ufeff" : ""), ...text].map((c) =>
    c.codePointAt(0)!
  );
  if (encoding === "utf-8") {
    return new TextEncoder().encode((bom ? "\ufeff" : "") + text);
  }
  const units = encoding.startsWith("utf-16")
    ? [...(bom ? "\ufeff" : "") + text].flatMap((c) => {
      const p = c.codePointAt(0)!;
      return p < 0x10000
        ? [p]
        : [0xd800 + ((p - 0x10000) >> 10), 0xdc00 + ((p - 0x10000) & 0x3ff)];
    })
    : points;
  const size = encoding.startsWith("utf-16") ? 2 : 4;
  const view = new DataView(new ArrayBuffer(units.length * size));
  const little = encoding.endsWith("le");
  units.forEach((unit, i) =>
    size === 2
      ? view.setUint16(i * 2, unit, little)
      : view.setUint32(i * 4, unit, little)
  );
  return new Uint8Array(view.buffer);
}

/** What Python's json.loads reads from `bytes`: the oracle. */
async function pythonReads(bytes: Uint8Array): Promise<string> {
  const child = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      "import json, sys; print(json.dumps(json.loads(sys.stdin.buffer.read())))",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(bytes);
  await writer.close();
  const { stdout } = await child.output();
  return new TextDecoder().decode(stdout).trim();
}

Deno.test("jsonText() reads a body as Python's json.loads does", async (t) => {
  for (
    const encoding of ["utf-8", "utf-16le", "utf-16be", "utf-32le", "utf-32be"]
  ) {
    for (const bom of [false, true]) {
      await t.step(
        `${encoding}${bom ? " with a byte order mark" : ""}`,
        async () => {
          const bytes = encoded(BODY, encoding, bom);
          const text = jsonText(bytes)?.text;
          strictEqual(text, BODY);
          strictEqual(
            JSON.stringify(JSON.parse(text!)),
            JSON.stringify(JSON.parse(await pythonReads(bytes))),
          );
        },
      );
    }
  }
  await t.step("the encodings json.detect_encoding names", () => {
    strictEqual(jsonEncoding(new TextEncoder().encode("{}")), "utf-8");
    strictEqual(
      jsonEncoding(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b])),
      "utf-8-sig",
    );
    strictEqual(jsonEncoding(new Uint8Array([0x7b, 0])), "utf-16le");
    strictEqual(jsonEncoding(new Uint8Array([0, 0x7b])), "utf-16be");
    strictEqual(jsonEncoding(new Uint8Array([0x7b, 0, 0, 0])), "utf-32le");
    strictEqual(jsonEncoding(new Uint8Array([0, 0, 0, 0x7b])), "utf-32be");
  });
  await t.step("bytes not valid in their encoding", () => {
    strictEqual(jsonText(new Uint8Array([0x7b, 0xff, 0x7d])), undefined);
    strictEqual(jsonText(new Uint8Array([0xff, 0xfe, 0x7b])), undefined);
    strictEqual(jsonText(new Uint8Array([0x7b, 0, 0, 0, 0x00])), undefined);
    strictEqual(jsonText(new Uint8Array([0x22, 0xed, 0xa0, 0x22])), undefined);
  });
  await t.step(
    "surrogates spelled alone pass, as surrogatepass reads them",
    () => {
      deepStrictEqual(
        jsonText(new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22])),
        {
          text: '"\ud800"',
          loneSurrogates: true,
        },
      );
      // Two halves in UTF-8 join in a JavaScript string; Python keeps two.
      deepStrictEqual(
        jsonText(new Uint8Array([0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80])),
        { text: "\u{1F600}", loneSurrogates: true },
      );
      deepStrictEqual(jsonText(new Uint8Array([0xff, 0xfe, 0x00, 0xd8])), {
        text: "\ud800",
        loneSurrogates: true,
      });
      deepStrictEqual(
        jsonText(new Uint8Array([0, 0, 0xd8, 0x00, 0, 0, 0, 0x7b])),
        { text: "\ud800{", loneSurrogates: true },
      );
      strictEqual(
        jsonText(new TextEncoder().encode(BODY))?.loneSurrogates,
        false,
      );
    },
  );
});

Deno.test("decide() budgets a body that starts with a UTF-8 byte order mark", async () => {
  const bytes = encoded(BODY, "utf-8", true);
  const decision = await decide(bytes, {
    kind: "chat",
    bridge: {
      window: 55705,
      contextLength: 65536,
      backend: new FakeBackend({ count: 5 }),
    },
  });
  strictEqual(decision.kind, "send");
  strictEqual(decision.kind === "send" && decision.result.action, "set");
});
