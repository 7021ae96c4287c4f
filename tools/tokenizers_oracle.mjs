// The tokenization oracle: the Rust `tokenizers` crate that vLLM uses,
// through its native Node binding (npm `tokenizers`, installed by .ci/run
// into tools/.oracle/). Reads on stdin
//   {"tokenizerPath": "...", "texts": ["..."], "addSpecialTokens": false}
// ("tokenizerJson": {...} instead of the path: the file's content itself)
// and prints {"ids": [[...], ...], "loadMs": n, "encodeMs": n}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(
  new URL("./.oracle/package.json", import.meta.url),
);
const { Tokenizer } = require("tokenizers");

const input = JSON.parse(readFileSync(0, "utf8"));
let start = performance.now();
const tokenizer = input.tokenizerJson === undefined
  ? Tokenizer.fromFile(input.tokenizerPath)
  : Tokenizer.fromString(JSON.stringify(input.tokenizerJson));
const loadMs = performance.now() - start;
const options = { addSpecialTokens: input.addSpecialTokens ?? true };
const ids = [];
start = performance.now();
for (const text of input.texts) {
  const encoding = await tokenizer.encode(text, null, options);
  ids.push(encoding.getIds());
}
const encodeMs = performance.now() - start;
process.stdout.write(JSON.stringify({ ids, loadMs, encodeMs }));
