/**
 * A scanner for code that reaches past another library's public API: a
 * cast through `unknown` or `any` (how code reaches what a type hides), a
 * cast to one of the library's types, prototype access, a member the
 * library declares `private` (TypeScript lets `obj["name"]` through), a
 * write to any member the library's classes declare (a patch in place),
 * and an import of a file inside the package rather than its entry. The
 * library's names come from its published declaration files. Pure
 * functions, so that each rule can be shown to fail on a small snippet.
 *
 * @module
 */
import { join } from "node:path";

/** What a library's declaration files declare. */
export interface LibraryDeclarations {
  /** The npm package name, for deep imports. */
  readonly packageName: string;
  /** The classes', interfaces' and types' names. */
  readonly types: ReadonlySet<string>;
  /** Members declared `private` and nowhere public. */
  readonly privateMembers: ReadonlySet<string>;
  /** Every member the classes declare, private or public. */
  readonly classMembers: ReadonlySet<string>;
}

/** A use of a library's internals. */
export interface InternalsUse {
  /** The file. */
  readonly file: string;
  /** The line, from 1. */
  readonly line: number;
  /** The rule broken. */
  readonly rule: string;
  /** The code found. */
  readonly code: string;
}

/** A member access: a dot (or `?.`) after a name, a call or an index, not a spread. */
const ACCESS = String.raw`(?<=[\w$)\]!])\s*\??\.\s*`;

const QUOTE = "[\"'`]";
/** An assignment operator, compound ones included, not a comparison. */
const ASSIGN = String.raw`(?:[-+*/%&|^]|\*\*|<<|>>>?|&&|\|\||\?\?)?=(?!=)`;

const MEMBER =
  /^\s+(?:(?:private|protected|public|readonly|static|abstract|declare)\s+)*([A-Za-z_$][\w$]*)\??\s*[:;(<=]/;

/**
 * Reads the names a library's `.d.ts` files declare.
 *
 * @param packageName The npm package name.
 * @param declarations The text of each declaration file.
 * @returns The types, the private members and the class members.
 */
export function readDeclarations(
  packageName: string,
  declarations: readonly string[],
): LibraryDeclarations {
  const types = new Set<string>();
  const privates = new Set<string>();
  const publics = new Set<string>();
  const classMembers = new Set<string>();
  for (const text of declarations) {
    for (
      const match of text.matchAll(
        /\b(?:class|interface|type)\s+([A-Za-z_$][\w$]*)/g,
      )
    ) types.add(match[1]!);
    let inClass = false;
    for (const line of text.split("\n")) {
      if (/^(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?class\b/.test(line)) {
        inClass = true;
      } else if (/^\S/.test(line) && !line.startsWith("}")) inClass = false;
      const member = MEMBER.exec(line)?.[1];
      if (member === undefined || member === "constructor") continue;
      if (/^\s+private\s/.test(line)) privates.add(member);
      else publics.add(member);
      if (inClass) classMembers.add(member);
    }
  }
  return {
    packageName,
    types,
    privateMembers: new Set([...privates].filter((name) => !publics.has(name))),
    classMembers,
  };
}

/**
 * The declaration files of an npm package in Deno's cache.
 *
 * @param packageName The npm package name.
 * @param version Its exact version.
 * @returns The text of each `.d.ts` file.
 */
export async function npmDeclarations(
  packageName: string,
  version: string,
): Promise<string[]> {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  const { npmCache } = JSON.parse(new TextDecoder().decode(info.stdout));
  const root = join(npmCache, "registry.npmjs.org", packageName, version);
  const texts: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory && entry.name !== "node_modules") await walk(path);
      else if (entry.name.endsWith(".d.ts")) {
        texts.push(await Deno.readTextFile(path));
      }
    }
  };
  await walk(root);
  if (texts.length === 0) {
    throw new Error(`no declaration files for ${packageName}@${version}`);
  }
  return texts;
}

/**
 * The uses of a library's internals in one module: its code and the code
 * of its JSDoc examples, not its prose.
 *
 * @param file The module's path, for the report.
 * @param text The module's text.
 * @param library What the library declares.
 * @returns The uses found.
 */
export function internalsUsed(
  file: string,
  text: string,
  library: LibraryDeclarations,
): InternalsUse[] {
  const found: InternalsUse[] = [];
  const names = (set: ReadonlySet<string>) =>
    [...set].map((name) => name.replace(/\$/g, "\\$")).join("|");
  const privates = names(library.privateMembers);
  const members = names(library.classMembers);
  const rules: [string, RegExp][] = [
    [
      "a cast through unknown or any",
      /\bas\s+(?:unknown|any)\b|:\s*any\b|<any>/,
    ],
    [
      "a cast to the library's type",
      new RegExp(`\\bas\\s+(?:typeof\\s+)?(?:${names(library.types)})\\b`),
    ],
    [
      "prototype access",
      /\.prototype\b|__proto__|\b(?:set|get)PrototypeOf\b|\bdefineProperty\b|\bReflect\./,
    ],
    [
      "a private member",
      new RegExp(
        `${ACCESS}(?:${privates})\\b|\\[\\s*${QUOTE}(?:${privates})${QUOTE}\\s*\\]`,
      ),
    ],
    [
      "a write to the library's member",
      new RegExp(
        `(?:${ACCESS}(?:${members})|\\[\\s*${QUOTE}\\w+${QUOTE}\\s*\\])\\s*${ASSIGN}`,
      ),
    ],
    [
      "an import of the package's own files",
      new RegExp(
        `["'](?:npm:)?${
          library.packageName.replace(/[/.]/g, "\\$&")
        }(?:@[^/"']*)?/[^"']+["']`,
      ),
    ],
  ];
  // Bracket access and imports are read with their strings; the rest without.
  const quoted = new Set([rules[3]![0], rules[4]![0], rules[5]![0]]);
  codeLines(text).forEach((line, i) => {
    const bare = blankStrings(line);
    for (const [rule, pattern] of rules) {
      if (pattern.test(bare) || quoted.has(rule) && pattern.test(line)) {
        found.push({ file, line: i + 1, rule, code: line.trim() });
      }
    }
  });
  return found;
}

/**
 * The module's lines with comments blanked, except the code of fenced
 * examples in them. Line numbers are kept.
 */
function codeLines(text: string): string[] {
  let inBlock = false;
  let inFence = false;
  return text.split("\n").map((line) => {
    if (inBlock) {
      const body = line.replace(/^\s*\*\s?/, "");
      if (/^```/.test(body.trim())) {
        inFence = !inFence;
        return "";
      }
      if (line.includes("*/")) {
        inBlock = false;
        inFence = false;
        return "";
      }
      return inFence ? body : "";
    }
    if (/^\s*\/\*/.test(line)) {
      inBlock = !line.includes("*/");
      return "";
    }
    return line.replace(/(^|\s)\/\/.*$/, "$1");
  });
}

/** A line with the contents of its quoted strings removed, so that text quoting a name counts for nothing. */
function blankStrings(line: string): string {
  return line.replace(/(["'`])(?:\\.|(?!\1).)*\1/g, "$1$1");
}
