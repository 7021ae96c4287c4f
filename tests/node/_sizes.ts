/**
 * The size budget for `prove.ts`: reads a `deno pack` tarball, and measures
 * the whole package and, per entry in `exports`, the `.js` modules that the
 * entry reaches, as Deno's module graph (`deno info --json`) sees them.
 *
 * @module
 */
import { MINUTE, mustRun, StepError } from "./_run.ts";

/** What a package may weigh (1 KB = 1000 bytes). */
interface Budget {
  /** The `.js` graph its `.` entry loads on import, and all it reaches. */
  readonly rootGraph: number;
  readonly rootReachable: number;
  /** Every file: .js, .d.ts, package.json, and the Markdown that ships. */
  readonly package: number;
}

/** The budgets, by package name. */
const BUDGETS: Readonly<Record<string, Budget>> = {
  // The root entry is budget(), the Backend contract, its errors and the
  // arithmetic: it imports no backend, no count cache and no configuration,
  // and loads nothing later on first use, so both graphs are the same. The
  // package holds the library, nine backends and their chains, the proxy
  // with its status page, the check of every count against the server's
  // usage, the shared store, the overflow signal every SDK's error carries,
  // the readers of four SDKs' messages for the preflight, the agent-framework
  // bridges, the `incontext` command line with its demo upstream and start-up
  // diagnostics, and every entry's documentation.
  "@incontext/incontext": {
    rootGraph: 60_000,
    rootReachable: 60_000,
    package: 1_600_000,
  },
  // The engine: a chat-template interpreter over the library's parser (with
  // the reuse of a grown conversation's loop items), a tokenizer.json
  // pipeline, tiktoken vocabularies (Kimi K2, Grok 2), transformers'
  // tokenizer-class table, vLLM's rules, DeepSeek's encoders and Harmony. Its
  // root entry loads the model host and the copy-and-compare the root
  // package's worker client shares; templates, tokenizers and the renderers
  // load on the first count.
  "@incontext/engine": {
    rootGraph: 84_000,
    rootReachable: 490_000,
    package: 540_000,
  },
};

/** The regular files of a `.tgz`, by path inside the package, with their bytes. */
export async function readTarball(
  path: string,
): Promise<Map<string, Uint8Array>> {
  const file = await Deno.open(path);
  const gunzipped = file.readable.pipeThrough(new DecompressionStream("gzip"));
  const tar = new Uint8Array(await new Response(gunzipped).arrayBuffer());
  const files = new Map<string, Uint8Array>();
  const decoder = new TextDecoder();
  const field = (header: Uint8Array, start: number, length: number) =>
    decoder.decode(header.subarray(start, start + length)).replace(
      /\0.*$/s,
      "",
    );
  for (let offset = 0; offset + 512 <= tar.length;) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const type = field(header, 156, 1);
    if (!["", "0", "5"].includes(type)) {
      throw new StepError(`Unsupported tar entry type '${type}' in ${path}`);
    }
    const name = [field(header, 345, 155), field(header, 0, 100)]
      .filter((part) => part !== "").join("/").replace(/^package\//, "");
    const size = parseInt(field(header, 124, 12).trim() || "0", 8);
    const body = tar.slice(offset + 512, offset + 512 + size);
    if (type !== "5") files.set(name, body);
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

export async function writeFiles(
  dir: string,
  files: Map<string, Uint8Array>,
): Promise<void> {
  for (const [name, bytes] of files) {
    const path = `${dir}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(path, bytes);
  }
}

export interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly exports: Record<string, { readonly import: string }>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<
    string,
    { readonly optional?: boolean }
  >;
}

export function readPackageJson(files: Map<string, Uint8Array>): PackageJson {
  const bytes = files.get("package.json");
  if (bytes === undefined) {
    throw new StepError("The tarball has no package.json");
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

interface Graph {
  /** Package-relative paths of the `.js` modules reached. */
  readonly modules: Set<string>;
  /** Bare specifiers reached: npm packages and `node:` builtins. */
  readonly external: Set<string>;
  /** Static imports between packed modules: what loading one loads at once. */
  readonly staticEdges: Map<string, Set<string>>;
}

interface DenoInfo {
  readonly modules: readonly {
    readonly specifier: string;
    readonly dependencies?: readonly {
      readonly specifier: string;
      readonly code?: { readonly specifier: string };
      readonly isDynamic?: boolean;
    }[];
  }[];
}

/** Adds the module graph of one packed `.js` file, as Deno's resolver sees it. */
async function addGraph(
  dir: string,
  path: string,
  graph: Graph,
): Promise<void> {
  const { stdout } = await mustRun(
    Deno.execPath(),
    ["info", "--json", "--no-config", `${dir}/${path}`],
    { cwd: dir, timeoutMs: MINUTE },
  );
  const info: DenoInfo = JSON.parse(stdout);
  const prefix = new URL(`file://${dir}/`).href;
  for (const module of info.modules) {
    if (!module.specifier.startsWith(prefix)) continue;
    const from = module.specifier.slice(prefix.length);
    graph.modules.add(from);
    for (const dependency of module.dependencies ?? []) {
      if (!/^\.{0,2}\//.test(dependency.specifier)) {
        graph.external.add(dependency.specifier);
      }
      const to = dependency.code?.specifier;
      if (to?.startsWith(prefix) && !dependency.isDynamic) {
        const edges = graph.staticEdges.get(from) ?? new Set();
        edges.add(to.slice(prefix.length));
        graph.staticEdges.set(from, edges);
      }
    }
  }
}

/** The modules loading `entry` loads at once: its static imports, transitively. */
function loadedOnImport(graph: Graph, entry: string): Set<string> {
  const loaded = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const path = pending.pop() as string;
    if (loaded.has(path)) continue;
    loaded.add(path);
    pending.push(...(graph.staticEdges.get(path) ?? []));
  }
  return loaded;
}

/**
 * The `.js` graph of one entry. Deno's graph follows static and literal
 * dynamic imports; a worker loaded by URL is found as a relative `.js`
 * string literal naming a packed file, which can only over-count.
 */
async function entryGraph(
  dir: string,
  entry: string,
  files: Map<string, Uint8Array>,
): Promise<Graph> {
  const graph: Graph = {
    modules: new Set(),
    external: new Set(),
    staticEdges: new Map(),
  };
  const pending = [entry];
  const seen = new Set<string>();
  while (pending.length > 0) {
    const path = pending.pop() as string;
    if (seen.has(path) || graph.modules.has(path)) continue;
    seen.add(path);
    await addGraph(dir, path, graph);
    for (const module of graph.modules) {
      const text = new TextDecoder().decode(files.get(module));
      for (
        const [, literal] of text.matchAll(/["'](\.\.?\/[^"'\s]+\.js)["']/g)
      ) {
        const url = new URL(literal as string, `file:///${module}`);
        const target = url.pathname.slice(1);
        if (files.has(target) && !graph.modules.has(target)) {
          pending.push(target);
        }
      }
    }
  }
  return graph;
}

function bytesOf(files: Map<string, Uint8Array>, paths: Iterable<string>) {
  let total = 0;
  for (const path of paths) total += files.get(path)?.length ?? 0;
  return total;
}

export function formatBytes(bytes: number): string {
  return `${bytes.toLocaleString("en-US")} (${(bytes / 1000).toFixed(1)} KB)`;
}

/** What a package's entries document (`deno doc`). */
export interface NameCounts {
  /** How many names each entry documents, by entry. */
  readonly perEntry: ReadonlyMap<string, number>;
  /** How many different names the entries document together. */
  readonly unique: number;
}

/** Measures the package packed without source maps, prints the tables, checks the budget. */
export async function measureAll(
  packed: ReadonlyMap<string, { readonly path: string }>,
  dir: string,
  report: string[],
  names: ReadonlyMap<string, NameCounts>,
): Promise<string> {
  const said: string[] = [];
  const problems: string[] = [];
  for (const [name, { path }] of packed) {
    const budget = BUDGETS[name];
    if (budget === undefined) {
      problems.push(`${name} has no budget`);
      continue;
    }
    report.push(`${name}:`, "");
    try {
      said.push(
        `${name}: ${await measure(
          path,
          `${dir}/${name.replace("/", "_")}`,
          report,
          { budget, names: names.get(name) },
        )}`,
      );
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      problems.push(`${name}: ${error.message}`);
    }
    report.push("");
  }
  if (problems.length > 0) throw new StepError(problems.join("; "));
  return said.join("; ");
}

async function measure(
  tarball: string,
  dir: string,
  report: string[],
  { budget, names }: {
    readonly budget: Budget;
    readonly names: NameCounts | undefined;
  },
): Promise<string> {
  const files = await readTarball(tarball);
  await writeFiles(dir, files);
  const manifest = readPackageJson(files);
  const total = bytesOf(files, files.keys());
  const lines = [
    "| entry | names documented | modules on import | bytes loaded on import | modules reachable | bytes reachable (incl. on first use) | reaches |",
    "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
  ];
  let rootBytes = -1;
  let rootReachable = -1;
  for (const [entry, target] of Object.entries(manifest.exports)) {
    const path = target.import.replace(/^\.\//, "");
    const graph = await entryGraph(dir, path, files);
    const onImport = loadedOnImport(graph, path);
    const bytes = bytesOf(files, onImport);
    const reachable = bytesOf(files, graph.modules);
    if (entry === ".") {
      rootBytes = bytes;
      rootReachable = reachable;
    }
    const reaches = [...graph.external].sort().join(", ") || "-";
    lines.push(
      `| \`${entry}\` | ${
        names?.perEntry.get(entry) ?? "?"
      } | ${onImport.size} | ${formatBytes(bytes)} | ${graph.modules.size} | ${
        formatBytes(reachable)
      } | ${reaches} |`,
    );
  }
  const perEntry = [...names?.perEntry.values() ?? []];
  const documented = `${perEntry.reduce((sum, n) => sum + n, 0)} (${
    names?.unique ?? "?"
  } different)`;
  lines.push(
    `| whole package: every file (.js, .d.ts, package.json, README, ...) | ${documented} | ${files.size} | ${
      formatBytes(total)
    } | |`,
  );
  report.push(...lines);
  return checkBudget(rootBytes, rootReachable, total, budget);
}

function checkBudget(
  rootBytes: number,
  rootReachable: number,
  total: number,
  budget: Budget,
): string {
  const problems = [];
  if (rootBytes < 0) problems.push("the package has no '.' export");
  if (rootBytes > budget.rootGraph) {
    problems.push(
      `the '.' entry loads ${formatBytes(rootBytes)} on import, over ${
        formatBytes(budget.rootGraph)
      }`,
    );
  }
  if (rootReachable > budget.rootReachable) {
    problems.push(
      `the '.' entry reaches ${formatBytes(rootReachable)}, over ${
        formatBytes(budget.rootReachable)
      }`,
    );
  }
  if (total > budget.package) {
    problems.push(
      `the package is ${formatBytes(total)}, over ${
        formatBytes(budget.package)
      }`,
    );
  }
  if (problems.length > 0) throw new StepError(problems.join("; "));
  return `'.' on import ${formatBytes(rootBytes)} <= ${
    formatBytes(budget.rootGraph)
  }; '.' reachable ${formatBytes(rootReachable)} <= ${
    formatBytes(budget.rootReachable)
  }; package ${formatBytes(total)} <= ${formatBytes(budget.package)}`;
}

/** Sums the bytes of the regular files under `dir`. */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) total += await directoryBytes(path);
    else if (entry.isFile) total += (await Deno.stat(path)).size;
  }
  return total;
}
