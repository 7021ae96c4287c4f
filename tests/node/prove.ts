/**
 * The Node proof and the size budget. From the repository root:
 *
 *     deno run -A tests/node/prove.ts
 *
 * It packs the package with `deno pack` (close to JSR's npm tarball),
 * installs the tarball into a fresh Node project in a temporary folder, runs
 * `consumer.node.mjs` there with `node --test`, runs the README's Node
 * example (the ```js block that starts with `// Node 20 (ESM)`) with `node`
 * exactly as written, saved as `.mjs` as the README says, and checks that
 * it prints what its last line shows, and type-checks `consumer.ts` and
 * `every_entry.ts` (one import of each entry in `exports`) with
 * `tsc --noEmit` (strict, module nodenext). `no_any.node.mjs` then walks
 * every declaration the entries export and fails on any `any` among the
 * package's types. What `deno pack` says about types is checked too: it may
 * only name private modules that no published `.d.ts` imports
 * (`_declarations.ts`). The `openai` SDK is installed next to it, so
 * `budgetedFetch` is proven under the real client. It then measures the package
 * packed with `--no-source-maps`: the whole package, and per entry in
 * `exports` the `.js` modules that entry reaches, found by Deno's own module
 * graph (`deno info --json` on the packed `.js`) plus any packed `.js` file
 * that a reached module names in a relative string literal (the count
 * worker, which is loaded by URL), with the names each entry documents
 * (`deno doc`). It fails when the root entry or the package exceeds the
 * budgets in `_sizes.ts` (1 KB = 1000 bytes). Last, it installs the
 * tarballs alone into a second project: npm must leave out the optional
 * peers, budget() and the vLLM backend must work without them
 * (`without_peers.node.mjs`); then it installs the peers, as a user of the
 * OpenAI backend does, and counts with them (`openai.node.mjs`), and it
 * reports what each install weighs.
 * Every failure is reported; the exit code is 1 if there was any.
 *
 * @module
 */

import { findNodeExample } from "./_readme_example.ts";
import { type Packed, packWorkspace } from "../../tools/pack.ts";
import { engineCases, writeFolders } from "./_engine_cases.ts";
import { checkDeclarations } from "./_declarations.ts";
import { killGroup, MINUTE, mustRun, running, StepError } from "./_run.ts";
import {
  directoryBytes,
  formatBytes,
  measureAll,
  type NameCounts,
  type PackageJson,
  readPackageJson,
  readTarball,
} from "./_sizes.ts";
import { documentedSurface } from "../_kit/public_surface.ts";

const ROOT = new URL("../../", import.meta.url);
const HERE = new URL("./", import.meta.url);
/** Pinned so that the proof does not drift; only the npm registry is needed. */
// The version tests/deno.json pins too, for `deno check` of no_any.node.mjs.
const TYPESCRIPT = "typescript@5.9.3";
const NODE_TYPES = "@types/node@20.19.43";
/**
 * The real SDK that `budgetedFetch` is proven with, the version tests/deno.json
 * pins. It declares `engines.node >=22`; npm still installs it on Node 20
 * (the warning is below `--loglevel=error`) and the proof shows it works there.
 */
const OPENAI = "openai@7.59.0";

interface StepResult {
  readonly name: string;
  readonly ok: boolean;
  readonly seconds: number;
  readonly detail: string;
}

/** Runs one step, timing it and turning a failure into a result. */
async function step(
  results: StepResult[],
  name: string,
  body: () => Promise<string>,
): Promise<boolean> {
  console.log(`\n=== ${name}`);
  const start = performance.now();
  let ok = true;
  let detail: string;
  try {
    detail = await body();
  } catch (error) {
    ok = false;
    detail = error instanceof StepError
      ? error.message
      : String(error instanceof Error ? error.stack : error);
    console.error(`FAILED: ${detail}`);
  }
  const seconds = (performance.now() - start) / 1000;
  results.push({ name, ok, seconds, detail });
  return ok;
}

/**
 * Packs both packages as `tools/pack.ts` does for npm (each pinned to the
 * versions it was tested with), into `dir`.
 */
async function pack(
  dir: string,
  options: { readonly noSourceMaps?: boolean } = {},
): Promise<Packed> {
  const packed = await packWorkspace({ outDir: dir, ...options });
  for (const { path } of packed.values()) {
    const { size } = await Deno.stat(path);
    if (size === 0) throw new StepError(`deno pack wrote an empty ${path}`);
  }
  return packed;
}

/** What pack said about types, checked against each package's published declarations. */
async function declarations(packed: Packed): Promise<string> {
  const said: string[] = [];
  for (const [name, { path, output }] of packed) {
    const files = await readTarball(path);
    const { untyped, declarations } = checkDeclarations(
      output,
      files,
      ROOT.href,
    );
    said.push(
      `${name}: ${declarations} .d.ts files; the ${untyped.length} modules pack wrote none for are private: no published declaration imports one`,
    );
  }
  return said.join("; ");
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

/** Creates the Node project and installs the tarballs with the consumer's tools. */
async function install(project: string, packed: Packed): Promise<string> {
  await Deno.mkdir(project);
  await Deno.writeTextFile(
    `${project}/package.json`,
    JSON.stringify({
      name: "incontext-node-proof",
      private: true,
      type: "module",
    }),
  );
  await mustRun("npm", [
    "install",
    "--save-exact",
    "--no-audit",
    "--no-fund",
    "--no-update-notifier",
    "--loglevel=error",
    ...[...packed.values()].map(({ path }) => path),
    TYPESCRIPT,
    NODE_TYPES,
    OPENAI,
  ], { cwd: project, timeoutMs: 5 * MINUTE });
  const installed = await readJson(
    `${project}/node_modules/@incontext/incontext/package.json`,
  );
  const { stdout } = await mustRun("node", ["--version"], {
    cwd: project,
    timeoutMs: MINUTE,
  });
  const major = Number(/^v(\d+)\./.exec(stdout.trim())?.[1]);
  if (!(major >= 20)) {
    throw new StepError(`Node 20 or later is needed: found ${stdout.trim()}`);
  }
  return `${installed.name}@${installed.version} on Node ${stdout.trim()}`;
}

/**
 * Lists each package's npm dependencies: the version it pins, what npm
 * installed, its size. Fails on a range that is not one exact version, or
 * on an installed version other than the pinned one.
 */
async function dependencies(
  project: string,
  packed: Packed,
  report: string[],
): Promise<string> {
  const lines = [
    "| package | dependency | version in package.json | installed | installed bytes |",
    "| --- | --- | --- | --- | ---: |",
  ];
  const problems: string[] = [];
  for (const [packageName, { path }] of packed) {
    const manifest = readPackageJson(await readTarball(path));
    for (
      const [name, range] of Object.entries(manifest.peerDependencies ?? {})
    ) {
      // Installed, and so checked, by optionalPeers().
      if (manifest.peerDependenciesMeta?.[name]?.optional !== true) {
        problems.push(`${packageName} has a peer ${name} that is not optional`);
      }
      lines.push(
        `| ${packageName} | ${name} (optional peer) | ${range} | not installed | - |`,
      );
    }
    for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
      const dir = `${project}/node_modules/${name}`;
      const installed = await readJson(`${dir}/package.json`);
      if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range)) {
        problems.push(
          `${packageName} asks for ${name}@${range}, not one version`,
        );
      } else if (installed.version !== range) {
        problems.push(
          `${packageName} pins ${name}@${range}, npm installed ${installed.version}`,
        );
      }
      lines.push(
        `| ${packageName} | ${name} | ${range} | ${installed.version} | ${
          formatBytes(await directoryBytes(dir))
        } |`,
      );
    }
  }
  report.push(...lines);
  if (problems.length > 0) throw new StepError(problems.join("; "));
  return `${
    lines.length - 2
  } npm dependencies, each pinned to one version and installed at it`;
}

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    lib: ["es2023"],
    types: ["node"],
    noEmit: true,
    // The package's own .d.ts files are checked too.
    skipLibCheck: false,
  },
  files: ["consumer.ts", "every_entry.ts"],
};

/**
 * A TypeScript file that imports every entry of the package's `exports` by
 * name, as `tsc` and `no_any.node.mjs` read them: a namespace import of each
 * entry whose declaration exports something, a bare import of the others
 * (the count worker's entry, which only runs).
 */
function everyEntry(
  manifest: PackageJson,
  files: ReadonlyMap<string, Uint8Array>,
  prefix: string,
): string {
  const decoder = new TextDecoder();
  const lines = Object.entries(manifest.exports).map(([entry, target], i) => {
    const name = `${manifest.name}${entry === "." ? "" : entry.slice(1)}`;
    const declaration = files.get(
      target.import.replace(/^\.\//, "").replace(
        /\.js$/,
        ".d.ts",
      ),
    );
    const exports = declaration !== undefined &&
      /^export\b/m.test(decoder.decode(declaration));
    return exports
      ? `import * as ${prefix}${i} from "${name}";\nexport { ${prefix}${i} };`
      : `import "${name}";`;
  });
  return `${lines.join("\n")}\n`;
}

async function copyConsumers(project: string, packed: Packed): Promise<void> {
  const consumers = [
    "consumer.node.mjs",
    "engine.node.mjs",
    "consumer.ts",
    "no_any.node.mjs",
  ];
  for (const name of consumers) {
    await Deno.copyFile(new URL(name, HERE), `${project}/${name}`);
  }
  const imports: string[] = [];
  for (const { path } of packed.values()) {
    const files = await readTarball(path);
    imports.push(
      everyEntry(readPackageJson(files), files, `package${imports.length}_`),
    );
  }
  await Deno.writeTextFile(`${project}/every_entry.ts`, imports.join(""));
  // The engine's cases: the model folders, and what Deno made of each case.
  await writeFolders(`${project}/model_folders`);
  await Deno.writeTextFile(
    `${project}/engine_cases.json`,
    JSON.stringify(await engineCases(`${project}/model_folders`)),
  );
  await Deno.writeTextFile(
    `${project}/tsconfig.json`,
    JSON.stringify(TSCONFIG, null, 2),
  );
  // A small model folder, for the local backend counting in the worker.
  await Deno.mkdir(`${project}/model_folder`, { recursive: true });
  const folder = new URL("../fixtures/model_folder/", HERE);
  for await (const entry of Deno.readDir(folder)) {
    await Deno.copyFile(
      new URL(entry.name, folder),
      `${project}/model_folder/${entry.name}`,
    );
  }
}

async function nodeTest(project: string): Promise<string> {
  // `node --test` ends only when the test file's process ends, so a handle
  // left open (an undisposed server, a referenced worker) fails by timeout.
  await mustRun(
    "node",
    [
      "--test",
      "--test-reporter=spec",
      "consumer.node.mjs",
      "engine.node.mjs",
    ],
    { cwd: project, timeoutMs: 2 * MINUTE, echo: true },
  );
  return "node --test consumer.node.mjs engine.node.mjs passed";
}

async function readmeExample(project: string): Promise<string> {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const example = findNodeExample(readme);
  await Deno.writeTextFile(`${project}/readme_example.mjs`, example.code);
  // Captured, so that a failure shows the example's own output.
  const { stdout } = await mustRun("node", ["readme_example.mjs"], {
    cwd: project,
    timeoutMs: MINUTE,
  });
  if (stdout.trim() !== example.output) {
    throw new StepError(
      `node readme_example.mjs printed ${
        JSON.stringify(stdout.trim())
      }, not what README.md shows: ${JSON.stringify(example.output)}`,
    );
  }
  return `node readme_example.mjs (README.md lines ${example.firstLine}-${example.lastLine}) printed what the README shows: ${example.output}`;
}

async function typeCheck(project: string): Promise<string> {
  await mustRun(
    "node",
    ["node_modules/typescript/bin/tsc", "--project", "tsconfig.json"],
    { cwd: project, timeoutMs: 2 * MINUTE, echo: true },
  );
  return `tsc --noEmit (${TYPESCRIPT}, ${NODE_TYPES}, strict, nodenext) passed`;
}

async function noAny(project: string): Promise<string> {
  const { stdout } = await mustRun("node", ["no_any.node.mjs"], {
    cwd: project,
    timeoutMs: 2 * MINUTE,
  });
  return stdout.trim();
}

/** What each package's entries document, from its source (`deno doc`). */
async function nameCounts(
  packed: Packed,
): Promise<Map<string, NameCounts>> {
  const counts = new Map<string, NameCounts>();
  for (const [name, { folder }] of packed) {
    const surface = await documentedSurface(new URL(`${folder}/`, ROOT));
    const all = [...surface.values()].flat().map((documented) =>
      documented.name
    );
    counts.set(name, {
      perEntry: new Map(
        [...surface].map(([entry, names]) => [entry, names.length]),
      ),
      unique: new Set(all).size,
    });
  }
  return counts;
}

const NPM_INSTALL = [
  "install",
  "--save-exact",
  "--no-audit",
  "--no-fund",
  "--no-update-notifier",
  "--loglevel=error",
];

/** The packages under a `node_modules` folder, and the bytes of all its files. */
async function installed(
  project: string,
): Promise<{ packages: string[]; bytes: number }> {
  const root = `${project}/node_modules`;
  const packages: string[] = [];
  for await (const entry of Deno.readDir(root)) {
    if (!entry.isDirectory || entry.name.startsWith(".")) continue;
    if (!entry.name.startsWith("@")) {
      packages.push(entry.name);
      continue;
    }
    for await (const scoped of Deno.readDir(`${root}/${entry.name}`)) {
      if (scoped.isDirectory) packages.push(`${entry.name}/${scoped.name}`);
    }
  }
  return { packages: packages.sort(), bytes: await directoryBytes(root) };
}

/** The optional peers the packed packages declare, as `name@version`. */
async function optionalPeerSpecs(packed: Packed): Promise<string[]> {
  const specs: string[] = [];
  for (const { path } of packed.values()) {
    const manifest = readPackageJson(await readTarball(path));
    for (
      const [name, version] of Object.entries(manifest.peerDependencies ?? {})
    ) {
      specs.push(`${name}@${version}`);
    }
  }
  return specs;
}

function megabytes(bytes: number): string {
  return `${bytes.toLocaleString("en-US")} (${(bytes / 1e6).toFixed(1)} MB)`;
}

/**
 * Installs the tarballs alone into `project`, as a user who budgets with
 * vLLM does, and runs `without_peers.node.mjs` there: npm must have left
 * out every optional peer.
 */
async function installWithoutPeers(
  project: string,
  packed: Packed,
  report: string[],
): Promise<string> {
  await Deno.mkdir(project);
  await Deno.writeTextFile(
    `${project}/package.json`,
    JSON.stringify({
      name: "incontext-without-peers",
      private: true,
      type: "module",
    }),
  );
  await mustRun("npm", [
    ...NPM_INSTALL,
    ...[...packed.values()].map(({ path }) => path),
  ], { cwd: project, timeoutMs: 5 * MINUTE });
  const { packages, bytes } = await installed(project);
  const peers = await optionalPeerSpecs(packed);
  const present = peers.filter((spec) =>
    packages.includes(spec.slice(0, spec.lastIndexOf("@")))
  );
  if (present.length > 0) {
    throw new StepError(
      `npm installed the optional peers ${present.join(", ")}`,
    );
  }
  report.push(
    "",
    "| install | npm packages | installed bytes |",
    "| --- | ---: | ---: |",
    `| the two tarballs alone | ${packages.length} | ${megabytes(bytes)} |`,
  );
  await Deno.copyFile(
    new URL("without_peers.node.mjs", HERE),
    `${project}/without_peers.node.mjs`,
  );
  await mustRun("node", [
    "--test",
    "--test-reporter=spec",
    "without_peers.node.mjs",
  ], {
    cwd: project,
    timeoutMs: 2 * MINUTE,
    echo: true,
  });
  return `${packages.length} packages, ${megabytes(bytes)}, none of ${
    peers.join(", ")
  }; node --test without_peers.node.mjs passed`;
}

/**
 * Adds the optional peers to the install of {@linkcode installWithoutPeers},
 * as a user of the OpenAI backend does, and runs `openai.node.mjs` there.
 */
async function installPeers(
  project: string,
  packed: Packed,
  report: string[],
): Promise<string> {
  const peers = await optionalPeerSpecs(packed);
  await mustRun("npm", [...NPM_INSTALL, ...peers], {
    cwd: project,
    timeoutMs: 5 * MINUTE,
  });
  const { packages, bytes } = await installed(project);
  report.push(
    `| and the optional peers, ${peers.join(", ")} | ${packages.length} | ${
      megabytes(bytes)
    } |`,
  );
  for (const file of ["openai.node.mjs", "../fixtures/openai_cookbook.json"]) {
    const url = new URL(file, HERE);
    await Deno.copyFile(url, `${project}/${url.pathname.split("/").pop()}`);
  }
  await mustRun("node", ["--test", "--test-reporter=spec", "openai.node.mjs"], {
    cwd: project,
    timeoutMs: 2 * MINUTE,
    echo: true,
  });
  return `${packages.length} packages, ${megabytes(bytes)} with ${
    peers.join(", ")
  }; node --test openai.node.mjs passed`;
}

function summarize(results: StepResult[], report: string[], seconds: number) {
  console.log("\n=== Sizes and dependencies (deno pack --no-source-maps)\n");
  console.log(report.join("\n"));
  console.log("\n=== Summary\n");
  for (const result of results) {
    const status = result.ok ? "ok  " : "FAIL";
    const first = result.detail.split("\n")[0];
    console.log(
      `${status} ${result.name} (${result.seconds.toFixed(1)} s): ${first}`,
    );
  }
  const failed = results.filter((result) => !result.ok).length;
  console.log(`\nNode proof finished in ${seconds.toFixed(1)} s`);
  console.log(`prove: ${results.length - failed} passed, ${failed} failed`);
  return failed;
}

async function prove(tmp: string): Promise<number> {
  const start = performance.now();
  const results: StepResult[] = [];
  const report: string[] = [];
  const project = `${tmp}/project`;
  let packed: Packed = new Map();
  if (
    await step(results, "deno pack", async () => {
      packed = await pack(`${tmp}/packed`);
      return `packed ${
        [...packed.values()].map(({ path }) => path).join(", ")
      }`;
    })
  ) {
    await step(results, "declarations", () => declarations(packed));
    await step(results, "size budget", async () => {
      const sized = await pack(`${tmp}/sized`, { noSourceMaps: true });
      return await measureAll(
        sized,
        `${tmp}/size`,
        report,
        await nameCounts(sized),
      );
    });
    if (await step(results, "npm install", () => install(project, packed))) {
      report.push("");
      await step(
        results,
        "dependencies",
        () => dependencies(project, packed, report),
      );
      await copyConsumers(project, packed);
      await step(results, "node --test", () => nodeTest(project));
      await step(results, "README example", () => readmeExample(project));
      await step(results, "tsc --noEmit", () => typeCheck(project));
      await step(results, "no any", () => noAny(project));
    }
    const bare = `${tmp}/without_peers`;
    if (
      await step(
        results,
        "npm install without optional peers",
        () => installWithoutPeers(bare, packed, report),
      )
    ) {
      await step(
        results,
        "npm install of the optional peers",
        () => installPeers(bare, packed, report),
      );
    }
  }
  return summarize(results, report, (performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const tmp = await Deno.makeTempDir({ prefix: "incontext-node-proof-" });
  const onInterrupt = () => {
    for (const pid of running) killGroup(pid);
    Deno.removeSync(tmp, { recursive: true });
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  let failed = 1;
  try {
    failed = await prove(tmp);
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
    await Deno.remove(tmp, { recursive: true });
  }
  Deno.exit(failed === 0 ? 0 : 1);
}

if (import.meta.main) await main();
