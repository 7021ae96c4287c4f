/**
 * Finding the Python that runs the user's Hermes: the one named explicitly,
 * else the interpreter on the `#!` line of the `hermes` executable on PATH
 * (Hermes' installers write the path of its virtual environment's Python
 * there), else `python3`.
 *
 * @module
 */
import { open } from "node:fs/promises";
import { delimiter, join } from "node:path";

/** The interpreter to run, and how it was found (for the start-up log and errors). */
export interface HermesPython {
  /** The command: a path or a name looked up on PATH. */
  readonly command: string;
  /** `INCONTEXT_HERMES_PYTHON`, `the hermes executable on PATH` or `python3 on PATH`. */
  readonly source: string;
}

/** Reads the first line of a file, at most 512 bytes; undefined when unreadable. */
async function firstLine(path: string): Promise<string | undefined> {
  let file;
  try {
    file = await open(path, "r");
    const buffer = new Uint8Array(512);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    const text = new TextDecoder().decode(buffer.subarray(0, bytesRead));
    return text.split("\n")[0];
  } catch {
    return undefined;
  } finally {
    await file?.close();
  }
}

/**
 * The interpreter of a `#!` line: `#!/venv/bin/python` gives the path,
 * `#!/usr/bin/env python3` (with or without `-S` and options) the name.
 */
export function shebangInterpreter(line: string): string | undefined {
  if (!line.startsWith("#!")) return undefined;
  const words = line.slice(2).trim().split(/\s+/).filter((w) => w !== "");
  const [program, ...rest] = words;
  if (program === undefined) return undefined;
  if (!/(^|\/)env$/.test(program)) {
    return /python[0-9.]*$/.test(program) ? program : undefined;
  }
  const name = rest.find((word) =>
    !word.startsWith("-") && !word.includes("=")
  );
  return name !== undefined && /python[0-9.]*$/.test(name) ? name : undefined;
}

/**
 * The Python to ask Hermes with.
 *
 * @param explicit `INCONTEXT_HERMES_PYTHON`, when set.
 * @param path The `PATH` to look for `hermes` on.
 */
export async function findHermesPython(
  explicit: string | undefined,
  path: string | undefined,
): Promise<HermesPython> {
  if (explicit !== undefined) {
    return { command: explicit, source: "INCONTEXT_HERMES_PYTHON" };
  }
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue;
    const line = await firstLine(join(dir, "hermes"));
    const interpreter = line === undefined
      ? undefined
      : shebangInterpreter(line);
    if (interpreter !== undefined) {
      return { command: interpreter, source: "the hermes executable on PATH" };
    }
  }
  return { command: "python3", source: "python3 on PATH" };
}
