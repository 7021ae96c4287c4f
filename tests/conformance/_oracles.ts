/**
 * The two oracles the conformance suite compares against, each failing with
 * the exact fix when what it needs is missing:
 *
 * - Python jinja2, as transformers and vLLM render chat templates: Debian's
 *   `/usr/bin/python3` with the `python3-jinja2` package (`.ci/run` installs
 *   it), driven through `tools/jinja2_oracle.py`.
 * - Hugging Face transformers, counting as vLLM counts
 *   (`tools/transformers_oracle.py`), in a Python environment in
 *   `tools/.oracle/py`.
 * - The Rust `tokenizers` crate vLLM tokenizes with, through its native npm
 *   binding (`tokenizers` in tests/deno.json): Deno fetches it, prebuilt
 *   binary included, like any other npm dependency.
 */

const JINJA2_FIX =
  "install Debian's python3-jinja2: `apt-get update && apt-get install -y python3-jinja2` (as .ci/run does)";

// Debian's python3 with python3-jinja2 is the oracle; a python3 elsewhere on
// PATH may carry another jinja2.
const PYTHON = await Deno.stat("/usr/bin/python3").then(
  () => "/usr/bin/python3",
  () => "python3",
);

/** One render job of tools/jinja2_oracle.py. */
export interface Jinja2Job {
  readonly template: string;
  readonly context_json: string;
  readonly context_key: string | undefined;
  readonly now: string;
}

/** What jinja2 made of one job: the text, or the exception it raised. */
export type Jinja2Outcome =
  | { text: string }
  | { error: { type: string; message: string } };

/** A render job whose context is a value, not JSON text. */
export interface Jinja2ValueJob {
  readonly template: string;
  readonly context: unknown;
}

/** Renders every job with Python jinja2, in one process. */
export async function jinja2Render(
  jobs: readonly (Jinja2Job | Jinja2ValueJob)[],
): Promise<Jinja2Outcome[]> {
  const script = new URL("../../tools/jinja2_oracle.py", import.meta.url);
  let output: Deno.CommandOutput;
  try {
    const child = new Deno.Command(PYTHON, {
      args: [script.pathname],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(jobs)));
    await writer.close();
    output = await child.output();
  } catch (error) {
    throw new Error(`python3 is missing: ${JINJA2_FIX}`, { cause: error });
  }
  const stderr = new TextDecoder().decode(output.stderr);
  if (!output.success) {
    throw new Error(
      stderr.includes("No module named 'jinja2'")
        ? `jinja2 is missing: ${JINJA2_FIX}`
        : `The jinja2 oracle failed: ${stderr.slice(0, 500)}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/** What the native binding is asked to tokenize. */
export interface NativeEncodeOptions {
  /** The tokenizer.json to load: its path, or its parsed content. */
  readonly tokenizer: { readonly path: string } | { readonly json: unknown };
  readonly texts: readonly string[];
  /** Whether the post-processor adds BOS/EOS, as vLLM's completion /tokenize does. */
  readonly addSpecialTokens: boolean;
}

/** The Rust `tokenizers` crate, loaded with one tokenizer.json. */
export interface NativeTokenizer {
  /** The ids of a text; rejects where the crate fails. */
  encode(text: string, addSpecialTokens: boolean): Promise<number[]>;
}

/** Loads a tokenizer.json into the Rust `tokenizers` crate. */
export async function nativeTokenizer(
  tokenizer: NativeEncodeOptions["tokenizer"],
): Promise<NativeTokenizer> {
  let binding: typeof import("tokenizers");
  try {
    binding = await import("tokenizers");
  } catch (error) {
    throw new Error(
      "The native tokenizers binding did not load: Deno fetches npm:tokenizers@0.23.2 (tests/deno.json) with its prebuilt binary for linux, macOS or Windows on x64 or arm64; run with --allow-ffi and network access to the npm registry",
      { cause: error },
    );
  }
  const loaded = "path" in tokenizer
    ? binding.Tokenizer.fromFile(tokenizer.path)
    : binding.Tokenizer.fromString(JSON.stringify(tokenizer.json));
  return {
    async encode(text, addSpecialTokens) {
      const encoding = await loaded.encode(text, null, { addSpecialTokens });
      return encoding.getIds();
    },
  };
}

/** The ids the Rust `tokenizers` crate gives each text. */
export async function nativeEncode(
  options: NativeEncodeOptions,
): Promise<number[][]> {
  const tokenizer = await nativeTokenizer(options.tokenizer);
  const ids: number[][] = [];
  for (const text of options.texts) {
    ids.push(await tokenizer.encode(text, options.addSpecialTokens));
  }
  return ids;
}

const TRANSFORMERS_PYTHON = new URL(
  "../../tools/.oracle/py/bin/python",
  import.meta.url,
);
const TRANSFORMERS_ORACLE = new URL(
  "../../tools/transformers_oracle.py",
  import.meta.url,
);
const TRANSFORMERS_SETUP =
  "python3 -m venv tools/.oracle/py && tools/.oracle/py/bin/pip install transformers jinja2";

/** One job of tools/transformers_oracle.py. */
export interface TransformersJob {
  /** The model folder whose tokenizer files are loaded. */
  readonly dir: string;
  /** The model type the folder's config.json names. */
  readonly modelType: string;
  /** `/tokenize` chat payloads. */
  readonly requests: readonly unknown[];
  /** A template overriding the folder's, as vLLM's `--chat-template`. */
  readonly chatTemplate?: string;
  /** vLLM's `--chat-template-content-format`. */
  readonly contentFormat?: "auto" | "string" | "openai";
}

/** What transformers made of each request: its count, or the exception it raised. */
export interface TransformersCounts {
  readonly transformers: string;
  /** The content format each request was preprocessed for. */
  readonly formats: ("string" | "openai")[];
  readonly counts: (number | { error: string })[];
}

/** Counts a job's requests as vLLM would, through transformers. */
export async function transformersCount(
  job: TransformersJob,
): Promise<TransformersCounts> {
  return (await transformersCountAll([job]))[0]!;
}

/** {@linkcode transformersCount} of several jobs, in one process. */
export async function transformersCountAll(
  jobs: readonly TransformersJob[],
): Promise<TransformersCounts[]> {
  return await runTransformersPython(
    [TRANSFORMERS_ORACLE.pathname],
    jobs,
  ) as TransformersCounts[];
}

/**
 * Runs a script in the Python of tools/.oracle/py with `input` as JSON on
 * stdin, offline, and parses its stdout as JSON; fails naming the set-up
 * command when that Python or transformers is missing.
 *
 * @param args The Python's arguments: a script's path, or `-c` and code.
 * @param input What the script reads from stdin.
 */
export async function runTransformersPython(
  args: readonly string[],
  input: unknown,
): Promise<unknown> {
  let output: Deno.CommandOutput;
  try {
    const child = new Deno.Command(TRANSFORMERS_PYTHON.pathname, {
      args: [...args],
      env: { HF_HUB_OFFLINE: "1", TRANSFORMERS_VERBOSITY: "error" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(input)));
    await writer.close();
    output = await child.output();
  } catch (error) {
    throw new Error(
      `The transformers oracle needs a Python with transformers in tools/.oracle/py: run \`${TRANSFORMERS_SETUP}\``,
      { cause: error },
    );
  }
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr);
    throw new Error(
      /No module named/.test(stderr)
        ? `transformers is not installed in tools/.oracle/py (${
          stderr.match(/No module named '[^']+'/)![0]
        }): run \`${TRANSFORMERS_SETUP}\``
        : `The transformers oracle failed: ${stderr.slice(-500)}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}
