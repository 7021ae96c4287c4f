/**
 * The architecture checker: reads the relative imports of the files under
 * `src/` and reports every import that breaks the layering declared in
 * `docs/architecture.md`. Pure functions over a graph, so that each rule can
 * be shown to fail on a small synthetic tree.
 *
 * @module
 */

/** Files (paths from the repository root) and the files each one imports. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** The layers, lowest first, as folder names directly under `src/`. */
export interface Layering {
  readonly layers: readonly string[];
}

const TESTING = "testing";
/**
 * The one product file that may import `src/testing/`: the command that
 * serves the fake upstream for trying the proxy, loaded only when it runs.
 */
export const TESTING_IMPORTER = "src/cli/demo_upstream/command.ts";
const BACKENDS = "backends";
const SHARED = "_shared";

/**
 * The relative module specifiers a TypeScript file names: static imports
 * and re-exports, side-effect imports, literal dynamic imports, and modules
 * loaded by URL (`new URL("./worker.ts", import.meta.url)`). Comments are
 * skipped, so the package imports of JSDoc examples do not count.
 */
export function readSpecifiers(text: string): string[] {
  const code = stripComments(text);
  const found: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
    /\bnew URL\(\s*["']([^"']+\.ts)["']\s*,\s*import\.meta\.url\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) {
      const specifier = match[1]!;
      if (specifier.startsWith("./") || specifier.startsWith("../")) {
        found.push(specifier);
      }
    }
  }
  return found;
}

/**
 * Drops block comments that open a line (JSDoc) and whole-line `//`
 * comments; a `//` inside a string (a URL) stays, as it is code.
 */
function stripComments(text: string): string {
  return text
    .replace(/^\s*\/\*[\s\S]*?\*\//gm, "")
    .replace(/^\s*\/\/.*$/gm, "");
}

/** Resolves `specifier` against the folder of `from` (both repository paths). */
export function resolvePath(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const part of specifier.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== ".") parts.push(part);
  }
  return parts.join("/");
}

/** The graph of `files` (path to source text): only imports of files in the set count. */
export function importGraph(files: ReadonlyMap<string, string>): ImportGraph {
  const graph = new Map<string, string[]>();
  for (const [path, text] of files) {
    const targets = readSpecifiers(text)
      .map((specifier) => resolvePath(path, specifier))
      .filter((target) => files.has(target));
    graph.set(path, [...new Set(targets)]);
  }
  return graph;
}

/**
 * The layer names of an architecture document: the lines of its fenced
 * `layers` block, highest first as the document shows them, returned lowest first.
 *
 * @throws {Error} If the document has no `layers` block.
 */
export function parseLayers(markdown: string): Layering {
  const block = /^```layers\n([\s\S]*?)^```/m.exec(markdown);
  if (block === null) throw new Error("no ```layers block in the document");
  const layers = block[1]!.split("\n")
    .map((line) => line.replace(/#.*/, "").trim())
    .filter((line) => line !== "")
    .map((line) => line.split(/\s+/)[0]!);
  return { layers: layers.reverse() };
}

/** Where a file sits: its layer folder and, under `backends/`, its backend folder. */
interface Place {
  readonly layer: string | undefined;
  readonly backend: string | undefined;
}

function placeOf(path: string): Place {
  const parts = path.split("/");
  if (parts[0] !== "src" || parts.length < 3) {
    return { layer: undefined, backend: undefined };
  }
  const layer = parts[1]!;
  const backend = layer === BACKENDS && parts.length >= 4
    ? parts[2]!
    : undefined;
  return { layer, backend };
}

/**
 * Every import of `graph` that breaks a rule, one line each, naming the
 * importing file and the file it imports:
 * - no cycle of imports, of any length;
 * - every file under `src/` sits in a declared layer, and imports only
 *   its own layer or the layers below it;
 * - no file outside `src/testing/` imports it, but {@linkcode TESTING_IMPORTER};
 * - no backend's folder imports another backend's folder (`_shared` is
 *   shared by all, and imports none of them).
 */
export function checkArchitecture(
  graph: ImportGraph,
  layering: Layering,
): string[] {
  const rank = new Map(layering.layers.map((name, index) => [name, index]));
  const problems: string[] = [];
  for (const path of [...graph.keys()].sort()) {
    const place = placeOf(path);
    if (path.startsWith("src/") && !rank.has(place.layer ?? "")) {
      problems.push(`${path} is in no declared layer`);
    }
    for (const target of graph.get(path)!) {
      const problem = importProblem(path, place, target, rank);
      if (problem !== undefined) problems.push(problem);
    }
  }
  for (const cycle of findCycles(graph)) {
    problems.push(`import cycle: ${cycle.join(" -> ")}`);
  }
  return problems;
}

function importProblem(
  path: string,
  place: Place,
  target: string,
  rank: ReadonlyMap<string, number>,
): string | undefined {
  const to = placeOf(target);
  const edge = `${path} imports ${target}`;
  if (
    to.layer === TESTING && place.layer !== TESTING && path !== TESTING_IMPORTER
  ) {
    return `${edge}: product code may not import src/testing/`;
  }
  const from = rank.get(place.layer ?? "");
  const into = rank.get(to.layer ?? "");
  if (from !== undefined && into !== undefined && into > from) {
    return `${edge}: the ${place.layer} layer may not import ${to.layer}, which is above it`;
  }
  if (
    place.layer === BACKENDS && to.layer === BACKENDS &&
    to.backend !== undefined && to.backend !== SHARED &&
    to.backend !== place.backend
  ) {
    return place.backend === undefined
      ? undefined
      : `${edge}: a backend's folder may not import another backend's folder`;
  }
  return undefined;
}

/**
 * One cycle per strongly connected component (Tarjan's algorithm), each
 * written as the path of imports that closes it, the first file repeated
 * at the end; a file that imports itself is a cycle too.
 */
export function findCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    components.push(component);
  };
  for (const node of [...graph.keys()].sort()) {
    if (!index.has(node)) visit(node);
  }
  return components
    .filter((c) => c.length > 1 || (graph.get(c[0]!) ?? []).includes(c[0]!))
    .map((component) => cyclePath(graph, new Set(component)));
}

/** A closed path through `members`, from the first of them in sorted order. */
function cyclePath(graph: ImportGraph, members: ReadonlySet<string>): string[] {
  const start = [...members].sort()[0]!;
  // Breadth-first from start back to start, inside the component: the shortest cycle through it.
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of graph.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)!) {
          path.splice(1, 0, at);
        }
        return [...path, start];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

/** Reads every `.ts` file below `folder` (a repository path such as `src`) from `root`. */
export async function readTree(
  root: URL,
  folder: string,
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const folders = [folder];
  for (let at = folders.pop(); at !== undefined; at = folders.pop()) {
    for await (const entry of Deno.readDir(new URL(`${at}/`, root))) {
      const path = `${at}/${entry.name}`;
      if (entry.isDirectory) folders.push(path);
      else if (entry.name.endsWith(".ts")) {
        files.set(path, await Deno.readTextFile(new URL(path, root)));
      }
    }
  }
  return files;
}

/**
 * Where tests sit. Each folder of `tests/` mirrors a folder of the source
 * (`tests/proxy/` mirrors `src/proxy/`, `tests/backends/vllm/` mirrors
 * `src/backends/vllm/`), but the folders named here.
 */
export interface TestLayout {
  /**
   * Folders directly under `tests/` that mirror nothing: suites across
   * layers, the shared helpers, the fixtures.
   */
  readonly crossCutting: readonly string[];
  /**
   * Folders directly under `tests/` that mirror the repository folder of
   * the same name instead of one under `src/` (`tests/examples/`).
   */
  readonly outsideSrc: readonly string[];
  /**
   * Folders directly under `tests/` that mirror the source of a workspace
   * member (`tests/engine/` mirrors `packages/engine/src/`).
   */
  readonly members: Readonly<Record<string, string>>;
}

/** The layout of this repository's `tests/`. */
export const TEST_LAYOUT: TestLayout = {
  crossCutting: ["conformance", "reliability", "node", "_kit", "fixtures"],
  outsideSrc: ["examples"],
  members: { engine: "packages/engine/src" },
};

/**
 * The modules a test file's header says it covers: the repository paths of
 * its `// Covers: a.ts, b.ts` line, read among the comments that open the
 * file; undefined when it has none.
 */
export function coveredModules(text: string): string[] | undefined {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    const covers = /^\/\/ Covers:(.*)$/.exec(trimmed);
    if (covers !== null) {
      return covers[1]!.split(",").map((path) => path.trim())
        .filter((path) => path !== "");
    }
    const comment = trimmed === "" || trimmed.startsWith("//") ||
      trimmed.startsWith("/*") || trimmed.startsWith("*");
    if (!comment) return undefined;
  }
  return undefined;
}

/** The source folder a folder of `tests/` mirrors (`tests/proxy` -> `src/proxy`). */
function mirrorOf(testFolder: string, layout: TestLayout): string {
  const rest = testFolder.split("/").slice(1);
  const member = layout.members[rest[0]!];
  if (member !== undefined) return [member, ...rest.slice(1)].join("/");
  return layout.outsideSrc.includes(rest[0]!)
    ? rest.join("/")
    : ["src", ...rest].join("/");
}

/**
 * Every test file of `tests` (paths from the repository root to their text)
 * that breaks the layout, one line each:
 * - a folder of `tests/` mirrors an existing source folder, but the
 *   cross-cutting ones of `layout`;
 * - a `*_test.ts` in such a folder is named after a module of the folder it
 *   mirrors (`tests/proxy/handler_test.ts`, `src/proxy/handler.ts`), or its
 *   header names the modules it covers, each existing and one of them in
 *   that folder;
 * - the top of `tests/` holds no helper (they live in `tests/_kit/`) and no
 *   test named after a module, which belongs beside that module's mirror.
 *
 * @param sources The repository paths of every source file (`src/`, and the
 * folders `layout.outsideSrc` names).
 */
export function checkTestLayout(
  tests: ReadonlyMap<string, string>,
  sources: ReadonlySet<string>,
  layout: TestLayout,
): string[] {
  const folders = new Set<string>();
  for (const path of sources) {
    const parts = path.split("/");
    for (let end = 1; end < parts.length; end++) {
      folders.add(parts.slice(0, end).join("/"));
    }
  }
  const problems: string[] = [];
  const unmirrored = new Set<string>();
  for (const path of [...tests.keys()].sort()) {
    const parts = path.split("/");
    if (parts.length === 2) {
      problems.push(...topLevelProblems(path, sources));
      continue;
    }
    if (layout.crossCutting.includes(parts[1]!)) continue;
    const folder = parts.slice(0, -1).join("/");
    const mirror = mirrorOf(folder, layout);
    if (!folders.has(mirror)) {
      if (!unmirrored.has(folder)) {
        problems.push(
          `${folder}/ mirrors no source folder: ${mirror}/ does not exist`,
        );
      }
      unmirrored.add(folder);
      continue;
    }
    if (!path.endsWith("_test.ts")) continue;
    const problem = testProblem(path, tests.get(path)!, mirror, sources);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

function testProblem(
  path: string,
  text: string,
  mirror: string,
  sources: ReadonlySet<string>,
): string | undefined {
  const base = path.slice(path.lastIndexOf("/") + 1, -"_test.ts".length);
  const named = `${mirror}/${base}.ts`;
  const covered = coveredModules(text);
  if (covered === undefined) {
    return sources.has(named)
      ? undefined
      : `${path} names no module: ${named} does not exist, and its header names none it covers`;
  }
  const missing = covered.filter((module) => !sources.has(module));
  if (missing.length > 0) {
    return `${path} covers modules that do not exist: ${missing.join(", ")}`;
  }
  const beside = covered.some((module) =>
    module.slice(0, module.lastIndexOf("/")) === mirror
  );
  return beside || sources.has(named)
    ? undefined
    : `${path} covers no module of ${mirror}/, the folder it mirrors`;
}

function topLevelProblems(
  path: string,
  sources: ReadonlySet<string>,
): string[] {
  const name = path.slice("tests/".length);
  if (!name.endsWith("_test.ts")) {
    return name.endsWith(".ts")
      ? [
        `${path} is a helper at the top of tests/: helpers live in tests/_kit/`,
      ]
      : [];
  }
  const module = `/${name.slice(0, -"_test.ts".length)}.ts`;
  const twin = [...sources].sort().find((source) => source.endsWith(module));
  if (twin === undefined) return [];
  const folder = twin.slice(0, twin.lastIndexOf("/")).replace(/^src\//, "");
  return [`${path} is named after ${twin}: it belongs in tests/${folder}/`];
}

/**
 * Every relative import of `files` (repository paths to source text) that
 * leaves the package its file sits in, one line each: the packages are the
 * folders of `members` and the root, which holds everything else but the
 * members. Packages meet by name only.
 */
export function crossingImports(
  files: ReadonlyMap<string, string>,
  members: readonly string[],
): string[] {
  const packageOf = (path: string) =>
    members.find((member) => path.startsWith(`${member}/`)) ?? ".";
  const problems: string[] = [];
  for (
    const [path, text] of [...files].sort(([a], [b]) => a.localeCompare(b))
  ) {
    for (const specifier of readSpecifiers(text)) {
      const target = resolvePath(path, specifier);
      if (packageOf(target) !== packageOf(path)) {
        problems.push(`${path} imports ${target}: another package, by path`);
      }
    }
  }
  return problems;
}
