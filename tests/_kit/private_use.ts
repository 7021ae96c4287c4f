/**
 * Finds where modules reach past another library's public API: an import
 * of a name its entry does not export (or of one of its files), a subclass
 * of one of its classes (to override its methods), a cast through
 * `unknown` or `any` or to one of its types (how TypeScript lets code reach
 * what the typings hide), the prototype chain, property definitions or an
 * object's `constructor` (how a class the library does not export is
 * fetched from one of its instances), reflection, a write to a member its
 * classes declare (a patch in place), and the names of its private members
 * and unexported classes, all read from its own typings.
 *
 * Comments and the contents of strings are not code, except the code of a
 * JSDoc example (a fenced block), which users copy: a private member's
 * name is still reported in a string (`object["privateMethod"]`), an
 * unexported class's name is not (a node's `type` field says
 * `"CallExpression"`).
 *
 * @module
 */
import { dirname, join, relative } from "node:path";

/** What a library publishes, and what it keeps to itself. */
export interface LibrarySurface {
  /** The bare specifier modules import it by: `@huggingface/jinja`. */
  readonly specifier: string;
  /** The names its entry exports: the only names a module may import from it. */
  readonly exports: readonly string[];
  /**
   * The members its typings mark `private` or `protected`: reported as a
   * property access, a bracket access or a string.
   *
   * @default {[]}
   */
  readonly privateMembers?: readonly string[];
  /**
   * The classes its typings declare but its entry does not export:
   * reported wherever code names one the module does not declare or import
   * from its own files.
   *
   * @default {[]}
   */
  readonly unexported?: readonly string[];
  /**
   * The classes, interfaces and types its typings declare: a cast to one
   * is reported unless the module declares that name itself.
   *
   * @default {[]}
   */
  readonly types?: readonly string[];
  /**
   * The members its classes declare, public or not: a write to one is
   * reported unless a class or interface of the scanned modules declares
   * that member too.
   *
   * @default {[]}
   */
  readonly classMembers?: readonly string[];
}

/** A module's code with comments and string contents blanked, and its strings. */
interface Stripped {
  readonly code: string;
  readonly strings: readonly { readonly value: string; readonly at: number }[];
}

/** What a `/` after which starts a regular expression, not a division. */
const BEFORE_REGEX = new Set("(,=:[!&|?{};+-*%<>~^".split(""));
const KEYWORDS_BEFORE_REGEX = new Set([
  "return",
  "typeof",
  "case",
  "of",
  "in",
  "void",
  "throw",
  "new",
  "delete",
  "yield",
  "await",
]);

/**
 * Blanks comments, string and template text and regular expressions with
 * spaces (keeping every offset and line), keeping `${...}` code; collects
 * the strings and template texts.
 */
export function stripNonCode(source: string): Stripped {
  const out = source.split("");
  const strings: { value: string; at: number }[] = [];
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  /** Whether a `/` at `at` starts a regular expression: read back over the code so far. */
  const startsRegex = (at: number) => {
    let k = at - 1;
    while (k >= 0 && /\s/.test(out[k]!)) k--;
    if (k < 0) return true;
    if (!/[\w$]/.test(out[k]!)) return BEFORE_REGEX.has(out[k]!);
    const word = out.slice(0, k + 1).join("").match(/[\w$]+$/)![0];
    return KEYWORDS_BEFORE_REGEX.has(word);
  };
  // Open template literals: the brace depth of each `${` being read.
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  /** Reads template text from `i` up to its end or a `${`. */
  const templateText = () => {
    const start = i;
    while (i < source.length && source[i] !== "`") {
      if (source[i] === "\\") i += 2;
      else if (source[i] === "$" && source[i + 1] === "{") {
        strings.push({ value: source.slice(start, i), at: start });
        blank(start, i);
        templates.push(depth);
        i += 2;
        return;
      } else i++;
    }
    strings.push({ value: source.slice(start, i), at: start });
    blank(start, i);
    i++;
  };
  while (i < source.length) {
    const ch = source[i]!;
    const next = source[i + 1];
    if (ch === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      blank(i, stop);
      i = stop;
    } else if (ch === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (ch === "'" || ch === '"') {
      let k = i + 1;
      while (k < source.length && source[k] !== ch && source[k] !== "\n") {
        k += source[k] === "\\" ? 2 : 1;
      }
      strings.push({ value: source.slice(i + 1, k), at: i });
      blank(i + 1, k);
      i = k + 1;
    } else if (ch === "`") {
      i++;
      templateText();
    } else if (ch === "}" && templates.at(-1) === depth) {
      templates.pop();
      i++;
      templateText();
    } else if (ch === "/" && startsRegex(i)) {
      let k = i + 1;
      let inClass = false;
      while (k < source.length && source[k] !== "\n") {
        if (source[k] === "\\") k++;
        else if (source[k] === "[") inClass = true;
        else if (source[k] === "]") inClass = false;
        else if (source[k] === "/" && !inClass) break;
        k++;
      }
      blank(i + 1, k);
      i = k + 1;
    } else {
      if (ch === "{") depth++;
      if (ch === "}") depth--;
      i++;
    }
  }
  return { code: out.join(""), strings };
}

const lineOf = (source: string, at: number) =>
  source.slice(0, at).split("\n").length;

/** An import or re-export. */
interface Import {
  readonly specifier: string;
  /** The names imported (`default`, `*` for a namespace). */
  readonly names: string[];
  /** The local names they are bound to. */
  readonly aliases: string[];
  readonly at: number;
}

/** Every import specifier of a module, with the names it imports. */
function importsOf(
  code: string,
  source: string,
): Import[] {
  const found: Import[] = [];
  // The specifier is a string, blanked in `code`: read it from the source.
  const statement =
    /\b(?:import|export)\s+(?:type\s+)?(?:([\w$]+)\s*,?\s*)?(?:\{([^}]*)\}|\*\s+as\s+([\w$]+)|\*)?\s*from\s*["']/g;
  for (const match of code.matchAll(statement)) {
    const at = match.index! + match[0].length;
    const end = source.indexOf(source[at - 1]!, at);
    const names = (match[2] ?? "").split(",").map((part) =>
      part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!
    ).filter((name) => name !== "");
    const aliases = (match[2] ?? "").split(",").map((part) =>
      part.trim().split(/\s+as\s+/).at(-1)!
    ).filter((name) => name !== "");
    if (match[1] !== undefined) {
      names.push("default");
      aliases.push(match[1]);
    }
    if (match[3] !== undefined) aliases.push(match[3]);
    if (/\*/.test(match[0])) names.push("*");
    found.push({
      specifier: source.slice(at, end),
      names,
      aliases,
      at: match.index!,
    });
  }
  for (const match of code.matchAll(/\bimport\s*["']/g)) {
    const at = match.index! + match[0].length;
    const end = source.indexOf(source[at - 1]!, at);
    found.push({
      specifier: source.slice(at, end),
      names: [],
      aliases: [],
      at: match.index!,
    });
  }
  for (const match of code.matchAll(/\bimport\s*\(\s*["']/g)) {
    const at = match.index! + match[0].length;
    const end = source.indexOf(source[at - 1]!, at);
    found.push({
      specifier: source.slice(at, end),
      names: ["*"],
      aliases: [],
      at: match.index!,
    });
  }
  return found;
}

/** The names a module declares or imports from its own files. */
function ownNames(code: string, source: string): Set<string> {
  const names = new Set<string>();
  const declared =
    /\b(?:type|interface|class|function|const|let|var|enum)\s+([\w$]+)/g;
  for (const match of code.matchAll(declared)) names.add(match[1]!);
  for (const { specifier, aliases } of importsOf(code, source)) {
    if (specifier.startsWith(".")) {
      for (const name of aliases) names.add(name);
    }
  }
  return names;
}

/** A specifier without `npm:` and without the version: `@scope/name/path`. */
function unversioned(specifier: string): string {
  return specifier.replace(/^npm:\/?/, "").replace(
    /^((?:@[^/]+\/)?[^/@]+)@[^/]*/,
    "$1",
  );
}

/** Whether a specifier names the library or one of its files. */
function isLibrary(specifier: string, library: string): boolean {
  const name = unversioned(specifier);
  return name === library || name.startsWith(`${library}/`);
}

/** Whether a specifier names one of the library's files, not its entry. */
function isLibraryFile(specifier: string, library: string): boolean {
  return unversioned(specifier).startsWith(`${library}/`);
}

/**
 * Reports each place where the given modules reach past the library's
 * public API, as `path:line: what`.
 *
 * @param files Module sources by path.
 * @param library What the library publishes and keeps to itself.
 * @returns The findings; none for modules that use only its public API.
 */
export function privateUses(
  files: ReadonlyMap<string, string>,
  library: LibrarySurface,
): string[] {
  const findings = new Set<string>();
  const exported = new Set(library.exports);
  const privates = new Set(library.privateMembers ?? []);
  const unexported = new Set(library.unexported ?? []);
  const types = new Set(library.types ?? []);
  const members = new Set(library.classMembers ?? []);
  const ownMembers = new Set<string>();
  for (const source of files.values()) {
    for (const name of membersDeclared(stripNonCode(source).code)) {
      ownMembers.add(name);
    }
  }
  for (const [path, file] of files) {
    // The module's code, then the code of its JSDoc examples, which users
    // copy: both are held to the public API, on the module's own lines.
    for (const source of [file, docExamples(file)]) {
      const { code, strings } = stripNonCode(source);
      const report = (at: number, what: string) =>
        findings.add(`${path}:${lineOf(source, at)}: ${what}`);
      // The library's names here, and what is made from them (`const Base = Interpreter`).
      const fromLibrary = new Set<string>();
      for (const { specifier, names, aliases, at } of importsOf(code, source)) {
        if (!isLibrary(specifier, library.specifier)) continue;
        if (isLibraryFile(specifier, library.specifier)) {
          report(
            at,
            `imports ${specifier}, a file of the library, not its entry`,
          );
        }
        for (const alias of aliases) fromLibrary.add(alias);
        for (const imported of names) {
          if (imported !== "*" && !exported.has(imported)) {
            report(
              at,
              `imports ${imported}, which the library does not export`,
            );
          }
        }
      }
      for (
        const match of code.matchAll(
          /\b(?:const|let|var)\s+([\w$]+)\s*=([^;]*)/g,
        )
      ) {
        const made = match[2]!.match(/[\w$]+/g) ?? [];
        if (made.some((name) => fromLibrary.has(name))) {
          fromLibrary.add(match[1]!);
        }
      }
      const own = ownNames(code, source);
      const patterns: [RegExp, (match: RegExpMatchArray) => string | null][] = [
        [/\bas\s+unknown\s+as\b/g, () => "casts through unknown"],
        [/\bas\s+any\b|:\s*any\b|<any>/g, () => "casts through any"],
        [
          /\bas\s+(?:typeof\s+)?([\w$]+)/g,
          (m) =>
            types.has(m[1]!) && !own.has(m[1]!)
              ? `casts to the library's type ${m[1]}`
              : null,
        ],
        [/\bprototype\b|\b__proto__\b/g, (m) => `reads the ${m[0]} chain`],
        [/\b(?:get|set)PrototypeOf\b/g, (m) => `calls ${m[0]}`],
        [
          /\bdefinePropert(?:y|ies)\b/g,
          (m) => `calls ${m[0]} (a patch in place)`,
        ],
        [
          /\.\s*constructor\b/g,
          () => "reads an object's constructor (a class that is not exported)",
        ],
        [/\bReflect\s*\./g, () => "uses Reflect"],
        [/\bgetOwnProperty\w*/g, (m) => `calls ${m[0]}`],
        [
          /\bclass\s+[\w$]+\s+extends\s+([\w$]+)/g,
          (m) =>
            fromLibrary.has(m[1]!)
              ? `subclasses the library's ${m[1]} (to override its methods)`
              : null,
        ],
        [
          // A member access, not a spread (`...name`).
          /(?:(?<![.?])\.|\?\.)\s*([\w$]+)/g,
          (m) => privates.has(m[1]!) ? `uses the private member ${m[1]}` : null,
        ],
        [
          /\boverride\s+([\w$]+)/g,
          (m) =>
            privates.has(m[1]!) ? `overrides the private member ${m[1]}` : null,
        ],
        [
          new RegExp(
            String.raw`(?<=[\w$)\]!])\s*\??\.\s*([\w$]+)\s*${ASSIGN}`,
            "g",
          ),
          (m) =>
            members.has(m[1]!) && !ownMembers.has(m[1]!)
              ? `writes the library's member ${m[1]} (a patch in place)`
              : null,
        ],
        [
          // A name, not a property (`x.slice` is the value's own).
          /(?<!\.\s*)\b[\w$]+\b/g,
          (m) =>
            unexported.has(m[0]) && !own.has(m[0]) &&
              !isObjectKey(code, m.index!, m[0].length)
              ? `names ${m[0]}, which the library does not export`
              : null,
        ],
      ];
      for (const [pattern, what] of patterns) {
        for (const match of code.matchAll(pattern)) {
          const message = what(match);
          if (message !== null) report(match.index!, message);
        }
      }
      for (const { value, at } of strings) {
        if (privates.has(value)) {
          report(at, `names the private member ${value} in a string`);
        }
        // `object["member"] = value`: the string is the member written.
        const after = code.slice(at + value.length + 1);
        if (
          members.has(value) && !ownMembers.has(value) &&
          /\[\s*$/.test(code.slice(0, at)) &&
          new RegExp(String.raw`^["'\x60]\s*\]\s*${ASSIGN}`).test(after)
        ) {
          report(at, `writes the library's member ${value} (a patch in place)`);
        }
      }
    }
  }
  return [...findings].sort();
}

/** An assignment operator, compound ones included, not a comparison. */
const ASSIGN = String.raw`(?:[-+*/%&|^]|\*\*|<<|>>>?|&&|\|\||\?\?)?=(?![=>])`;

/** Whether a name is an object literal's key (`{ Sequence: ... }`), not a value. */
function isObjectKey(code: string, at: number, length: number): boolean {
  return /[{,]\s*$/.test(code.slice(Math.max(0, at - 200), at)) &&
    /^\s*:(?!:)/.test(code.slice(at + length, at + length + 200));
}

/** The members the classes and interfaces of a module's code declare. */
function membersDeclared(code: string): string[] {
  return [
    ...code.matchAll(
      /^\s+(?:(?:private|protected|public|readonly|static|abstract|declare|override|async|get|set)\s+)*#?([A-Za-z_$][\w$]*)\??\s*[:;(<=]/gm,
    ),
  ].map((match) => match[1]!);
}

/**
 * A module's JSDoc examples (the fenced blocks of its block comments) as
 * code, everything else blanked: the same length in lines, so that a
 * finding names the example's line in the module.
 */
export function docExamples(source: string): string {
  let inBlock = false;
  let inFence = false;
  return source.split("\n").map((line) => {
    if (!inBlock) {
      inBlock = /^\s*\/\*/.test(line) && !line.includes("*/");
      return "";
    }
    if (line.includes("*/")) {
      inBlock = false;
      inFence = false;
      return "";
    }
    const body = line.replace(/^\s*\*\s?/, "");
    if (/^```/.test(body.trim())) {
      inFence = !inFence;
      return "";
    }
    return inFence ? body : "";
  }).join("\n");
}

/**
 * {@linkcode privateUses} of every module under a folder.
 *
 * @param root The repository's root.
 * @param folder The folder, from the root: `packages/engine/src/jinja`.
 * @param library What the library publishes and keeps to itself.
 * @returns The findings, by path from the root.
 */
export async function privateUsesIn(
  root: string,
  folder: string,
  library: LibrarySurface,
): Promise<string[]> {
  return privateUses(await readModules(root, folder), library);
}

/**
 * The folder Deno's npm cache holds a package's files in (the typings of
 * `npm:<name>@<version>` are under it).
 *
 * @param name The package's name.
 * @param version Its exact version.
 */
export async function npmPackageDir(
  name: string,
  version: string,
): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    npmCache: string;
  };
  return join(info.npmCache, "registry.npmjs.org", name, version);
}

/**
 * Reads every module under a folder, by its path from `root`.
 *
 * @param root The repository's root.
 * @param folder The folder, from the root.
 */
export async function readModules(
  root: string,
  folder: string,
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (/\.(ts|js|mjs)$/.test(entry.name)) {
        files.set(relative(root, path), await Deno.readTextFile(path));
      }
    }
  };
  await walk(join(root, folder));
  return files;
}

/**
 * What a library's shipped typings (`.d.ts` files) say: the names its
 * entry exports (following its re-exports), the members its classes mark
 * `private` or `protected` and declare nowhere public, the classes it
 * declares but does not export, every class, interface and type it
 * declares, and every member its classes declare.
 *
 * @param dir The folder of the typings (read with its subfolders).
 * @param entry The entry's typings, in that folder.
 */
export async function typingsSurface(
  dir: string,
  entry = "index.d.ts",
): Promise<
  {
    exports: string[];
    privateMembers: string[];
    unexported: string[];
    types: string[];
    classMembers: string[];
  }
> {
  const declared = new Set<string>();
  const types = new Set<string>();
  const privates = new Set<string>();
  const publics = new Set<string>();
  const classMembers = new Set<string>();
  for (const text of (await readTypings(dir)).values()) {
    for (
      const match of text.matchAll(
        /^(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+([\w$]+)/gm,
      )
    ) declared.add(match[1]!);
    for (
      const match of text.matchAll(/\b(?:class|interface|type)\s+([\w$]+)/g)
    ) types.add(match[1]!);
    let inClass = false;
    for (const line of text.split("\n")) {
      if (/^(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?class\b/.test(line)) {
        inClass = true;
      } else if (/^\S/.test(line) && !line.startsWith("}")) inClass = false;
      const member = line.match(
        /^\s+(?:(?:private|protected|public|readonly|static|abstract|declare)\s+)*([A-Za-z_$][\w$]*)\??\s*[:;(<=]/,
      )?.[1];
      if (member === undefined || member === "constructor") continue;
      if (/^\s+(?:private|protected)\s/.test(line)) privates.add(member);
      else publics.add(member);
      if (inClass) classMembers.add(member);
    }
  }
  const exports = new Set(await exportsOf(dir, entry));
  return {
    exports: [...exports].sort(),
    privateMembers: [...privates].filter((name) => !publics.has(name)).sort(),
    unexported: [...declared].filter((name) => !exports.has(name)).sort(),
    types: [...types].sort(),
    classMembers: [...classMembers].sort(),
  };
}

/** Every `.d.ts` file under a folder, by path. */
async function readTypings(dir: string): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const walk = async (folder: string): Promise<void> => {
    for await (const entry of Deno.readDir(folder)) {
      const path = join(folder, entry.name);
      if (entry.isDirectory && entry.name !== "node_modules") await walk(path);
      else if (entry.name.endsWith(".d.ts")) {
        texts.set(path, await Deno.readTextFile(path));
      }
    }
  };
  await walk(dir);
  if (texts.size === 0) throw new Error(`no typings under ${dir}`);
  return texts;
}

/** The names a typings file exports, following `export * from` and `export { ... } from`. */
async function exportsOf(dir: string, file: string): Promise<string[]> {
  const text = await Deno.readTextFile(join(dir, file));
  const names: string[] = [];
  for (
    const match of text.matchAll(
      /^export\s+declare\s+(?:abstract\s+)?(?:class|function|const|let|enum|namespace)\s+([\w$]+)|^export\s+(?:interface|type)\s+([\w$]+)/gm,
    )
  ) names.push((match[1] ?? match[2])!);
  for (const match of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const part of match[1]!.split(",")) {
      const name = part.trim().split(/\s+as\s+/).at(-1)!;
      if (name !== "") names.push(name);
    }
  }
  for (
    const match of text.matchAll(/^export\s+\*\s+from\s+["']([^"']+)["']/gm)
  ) {
    const target = join(dirname(file), match[1]!);
    const candidates = [`${target}.d.ts`, join(target, "index.d.ts")];
    const found = [];
    for (const candidate of candidates) {
      try {
        await Deno.stat(join(dir, candidate));
        found.push(candidate);
      } catch {
        // not this form of the module
      }
    }
    if (found.length === 0) {
      throw new Error(`${file} re-exports ${match[1]}, which has no typings`);
    }
    names.push(...await exportsOf(dir, found[0]!));
  }
  return names;
}
