/**
 * The declarations of the packed package, for `prove.ts`: what `deno pack`
 * said about types, and whether the published `.d.ts` files hold together.
 *
 * `deno pack` writes a `.d.ts` for the modules of the package's public type
 * graph (Deno's "fast check": the entries and every module their exported
 * types reference). A module reached only by a value import (a helper a
 * function body calls) has no declaration to emit, and pack says so in one
 * line, `Could not generate types for '<file>'. Types will not be included
 * for this module.` Such a line is harmless when no published `.d.ts` imports
 * that module: no type a consumer sees can come from it. Every other warning
 * fails the proof.
 *
 * @module
 */
import { StepError } from "./_run.ts";

const NO_TYPES =
  /^Could not generate types for '([^']+)'\. Types will not be included for this module\.$/;

/** What pack's output and the tarball's declarations showed. */
export interface DeclarationReport {
  /** The package's modules pack wrote no `.d.ts` for (paths inside the package). */
  readonly untyped: readonly string[];
  /** The `.d.ts` files published. */
  readonly declarations: number;
}

/**
 * Reads `deno pack`'s output and the packed files.
 *
 * @param output What `deno pack` printed (stdout and stderr), colours and all.
 * @param files The tarball's files by path inside the package.
 * @param root The package's folder as a `file://` URL ending in `/`.
 * @returns The modules without declarations and the number of declarations.
 * @throws {StepError} Naming every other warning, and every import of a
 * published `.d.ts` that reaches no published `.d.ts`.
 */
export function checkDeclarations(
  output: string,
  files: ReadonlyMap<string, Uint8Array>,
  root: string,
): DeclarationReport {
  const problems: string[] = [];
  const untyped: string[] = [];
  // deno-lint-ignore no-control-regex
  for (const raw of output.replace(/\x1b\[[0-9;]*m/g, "").split("\n")) {
    const line = raw.trim();
    const match = NO_TYPES.exec(line);
    if (match !== null) {
      const url = match[1]!;
      if (!url.startsWith(root)) {
        problems.push(`a module outside the package: ${url}`);
      } else untyped.push(url.slice(root.length));
    } else if (/warn|error|could not|failed/i.test(line)) {
      problems.push(`deno pack: ${line}`);
    }
  }
  const decoder = new TextDecoder();
  let declarations = 0;
  for (const [path, bytes] of files) {
    if (!path.endsWith(".d.ts")) continue;
    declarations++;
    const text = decoder.decode(bytes);
    const folder = path.slice(0, path.lastIndexOf("/") + 1);
    for (
      const [, specifier] of text.matchAll(
        /(?:from|import\()\s*["'](\.[^"']+)["']/g,
      )
    ) {
      const target = new URL(specifier!, `file:///${folder}`).pathname.slice(1);
      const declaration = target.replace(/\.js$/, ".d.ts");
      if (!files.has(declaration)) {
        problems.push(`${path} imports ${specifier}, which has no .d.ts`);
      }
    }
  }
  if (problems.length > 0) throw new StepError(problems.join("\n"));
  return { untyped, declarations };
}
