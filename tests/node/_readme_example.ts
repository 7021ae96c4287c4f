/**
 * The README's Node example, for `prove.ts` to run as written: the one
 * ```js block whose first line is {@linkcode NODE_EXAMPLE_MARKER}.
 *
 * @module
 */
import { StepError } from "./_run.ts";

/** The first line that marks the README's Node example. */
export const NODE_EXAMPLE_MARKER = "// Node 20 (ESM)";

/** A code block taken from a Markdown file, with where it was. */
export interface ReadmeExample {
  readonly code: string;
  /**
   * What it prints: its last line is a comment that shows the output, such
   * as `// set 8 63992`.
   */
  readonly output: string;
  /** The 1-based lines of the block's code, fences excluded. */
  readonly firstLine: number;
  readonly lastLine: number;
}

/**
 * Finds the Node example in Markdown text.
 *
 * @throws {StepError} Unless exactly one such block is found.
 */
export function findNodeExample(markdown: string): ReadmeExample {
  const lines = markdown.split("\n");
  const found: ReadmeExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```js" || lines[i + 1] !== NODE_EXAMPLE_MARKER) continue;
    const end = lines.indexOf("```", i + 1);
    if (end === -1) {
      throw new StepError(`The block at line ${i + 1} never ends`);
    }
    const last = lines[end - 1] ?? "";
    if (!last.startsWith("// ")) {
      throw new StepError(
        `The block at line ${
          i + 1
        } must end with a comment showing what it prints`,
      );
    }
    found.push({
      code: `${lines.slice(i + 1, end).join("\n")}\n`,
      output: last.slice(3),
      firstLine: i + 2,
      lastLine: end,
    });
    i = end;
  }
  if (found.length !== 1) {
    throw new StepError(
      `Expected one \`\`\`js block starting with '${NODE_EXAMPLE_MARKER}' in README.md: found ${found.length}`,
    );
  }
  return found[0]!;
}
