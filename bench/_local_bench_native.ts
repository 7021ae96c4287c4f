/**
 * Times the native `tokenizers` binding (the Rust crate vLLM uses, installed
 * into tools/.oracle/ by .ci/run) on given texts, in a Node subprocess: only
 * the encode calls inside Node are timed, one by one.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

/** What one run of the binding measured. */
export interface NativeTimes {
  /** Milliseconds to load `tokenizer.json`. */
  readonly loadMs: number;
  /** Token counts, one per text, without special tokens. */
  readonly counts: readonly number[];
  /** Milliseconds of each encode call. */
  readonly ms: readonly number[];
}

const SCRIPT = `
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
const input = JSON.parse(readFileSync(0, "utf8"));
const { Tokenizer } = createRequire(input.oraclePackage)("tokenizers");
let start = performance.now();
const tokenizer = Tokenizer.fromFile(input.tokenizerPath);
const loadMs = performance.now() - start;
const options = { addSpecialTokens: false };
if (input.texts.length > 0) await tokenizer.encode(input.texts[0], null, options);
const counts = [];
const ms = [];
for (const text of input.texts) {
  start = performance.now();
  const encoding = await tokenizer.encode(text, null, options);
  ms.push(performance.now() - start);
  counts.push(encoding.getIds().length);
}
process.stdout.write(JSON.stringify({ loadMs, counts, ms }));
`;

const ORACLE_PACKAGE = fileURLToPath(
  new URL("../tools/.oracle/package.json", import.meta.url),
);

/**
 * Encodes texts with the native binding, after one untimed warm-up encode.
 *
 * @param tokenizerPath The path of `tokenizer.json`.
 * @param texts The texts.
 * @returns The load time, the counts and the per-text encode times.
 */
export async function nativeEncodeTimes(
  tokenizerPath: string,
  texts: readonly string[],
): Promise<NativeTimes> {
  const child = new Deno.Command("node", {
    args: ["--input-type=module", "-e", SCRIPT],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(
      JSON.stringify({ oraclePackage: ORACLE_PACKAGE, tokenizerPath, texts }),
    ),
  );
  await writer.close();
  const output = await child.output();
  if (!output.success) throw new Error("the native tokenizers run failed");
  return JSON.parse(new TextDecoder().decode(output.stdout));
}
