/** Hermes homes for tests, and the stand-in Hermes package that reads them. */
import { join } from "node:path";

/** A stand-in Hermes: the modules and attributes the window script uses. */
export const STANDIN =
  new URL("../fixtures/hermes_standin/", import.meta.url).pathname;
/** A `hermes-agent` distribution's metadata alone, for the version it names. */
export const DIST =
  new URL("../fixtures/hermes_dist/", import.meta.url).pathname;
export const PATH = Deno.env.get("PATH") ?? "/usr/bin:/bin";
// No __pycache__ in the fixture tree.
export const ENV = { PATH, PYTHONPATH: STANDIN, PYTHONDONTWRITEBYTECODE: "1" };

/**
 * File work done by python3: `task test` grants no write permission, and a
 * Hermes home is what these tests are about.
 */
export async function python(code: string, ...args: string[]): Promise<string> {
  const { code: status, stdout, stderr } = await new Deno.Command("python3", {
    args: ["-c", code, ...args],
  }).output();
  const text = new TextDecoder().decode(stdout);
  if (status !== 0) throw new Error(new TextDecoder().decode(stderr));
  return text;
}

/** Makes a temporary directory and returns its path. */
export async function mkdtemp(prefix: string): Promise<string> {
  const code =
    "import tempfile, sys; print(tempfile.mkdtemp(prefix=sys.argv[1]))";
  return (await python(code, prefix)).trim();
}

/** Writes a text file. */
export async function writeFile(path: string, text: string): Promise<void> {
  await python(
    "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
    path,
    text,
  );
}

/** Removes a directory tree. */
export async function rm(path: string): Promise<void> {
  await python(
    "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)",
    path,
  );
}

/** The stand-in's threshold: neither mirrored release computes it. */
export function standin(context: number, pct: number, maxTokens = 0): number {
  return Math.floor(context * pct) - 1234 - maxTokens;
}

export interface Home extends AsyncDisposable {
  readonly config: string;
  write(config: unknown): Promise<void>;
}

/** A Hermes home with a config.yaml (JSON is YAML, and the stand-in reads JSON). */
export async function home(config: unknown): Promise<Home> {
  const dir = await mkdtemp("incontext-hermes-");
  const path = join(dir, "config.yaml");
  const write = async (value: unknown) => {
    await writeFile(path, JSON.stringify(value));
  };
  await write(config);
  return {
    config: path,
    write,
    async [Symbol.asyncDispose]() {
      await rm(dir);
    },
  };
}
