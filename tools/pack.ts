/**
 * Packs the workspace for npm: one tarball per package, each as `deno pack`
 * writes it, then made to say what the package was tested with. Every npm
 * dependency is pinned to the exact version the package's `deno.json`
 * imports (`deno pack` writes a caret range, which lets npm install a
 * release no test has seen); the root package depends on
 * `@incontext/engine` at the engine's own version, by name, and no longer
 * carries the copy of the engine's files `deno pack` puts beside its own.
 * A dependency that only one entry loads, on first use, is an optional peer
 * instead ({@linkcode OPTIONAL_PEERS}), which npm does not install.
 *
 *     deno run -A tools/pack.ts [DIR] [--no-source-maps]
 *
 * writes `DIR/incontext-engine.tgz` and `DIR/incontext.tgz` (DIR defaults to
 * `dist/`); `npm install DIR/incontext-engine.tgz DIR/incontext.tgz` then
 * installs the library into a Node project.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** A package of the workspace: its folder and the tarball it packs to. */
interface Member {
  /** The folder, relative to the repository root. */
  readonly folder: string;
  /** The tarball's file name. */
  readonly tarball: string;
}

/** The engine first: the root package depends on it. */
export const MEMBERS: readonly Member[] = [
  { folder: "packages/engine", tarball: "incontext-engine.tgz" },
  { folder: ".", tarball: "incontext.tgz" },
];

/**
 * The npm packages each package declares optional peers rather than
 * dependencies, pinned all the same: npm, pnpm and Yarn install one only
 * when the user asks for it. Each is imported dynamically by the one entry
 * that needs it, which names the package and its version when it is missing.
 */
export const OPTIONAL_PEERS: Readonly<Record<string, readonly string[]>> = {
  // OpenAI's encodings, 27 MB installed, for the openai backend's chat
  // estimate alone: budget() and every other entry run without them.
  "@incontext/incontext": ["gpt-tokenizer"],
};

/** What a `deno.json` of the workspace holds that packing reads. */
interface DenoJson {
  readonly name: string;
  readonly version: string;
  readonly imports?: Readonly<Record<string, string>>;
}

/** One tarball written: its path, and what `deno pack` said of it. */
export interface PackedTarball {
  readonly path: string;
  /** The package's folder, relative to the repository root. */
  readonly folder: string;
  /** `deno pack`'s report: the modules it wrote no types for, say. */
  readonly output: string;
}

/** The tarballs written, by package name. */
export type Packed = ReadonlyMap<string, PackedTarball>;

/** Options of {@linkcode packWorkspace}. */
export interface PackOptions {
  /** Where the tarballs go. */
  readonly outDir: string;
  /**
   * Leaves the source maps out, as the size budget measures the package.
   *
   * @default false
   */
  readonly noSourceMaps?: boolean;
}

async function readDenoJson(folder: string): Promise<DenoJson> {
  return JSON.parse(
    await Deno.readTextFile(new URL(`${folder}/deno.json`, ROOT)),
  );
}

/** The exact npm versions a `deno.json` imports, by package name. */
export function exactVersions(
  imports: Readonly<Record<string, string>>,
): Map<string, string> {
  const versions = new Map<string, string>();
  for (const target of Object.values(imports)) {
    const match = /^npm:(@?[^@]+)@(\d+\.\d+\.\d+(?:-[\w.]+)?)$/.exec(target);
    if (match !== null) versions.set(match[1]!, match[2]!);
  }
  return versions;
}

/**
 * The `package.json` dependencies of a package as tested: each pinned to
 * the version its `deno.json` imports, the workspace's own packages at
 * their versions, and none that only the copy of another package needed.
 *
 * @throws {Error} If a dependency has no exact version to pin it to.
 */
export function pinnedDependencies(
  packed: Readonly<Record<string, string>>,
  own: ReadonlyMap<string, string>,
  workspace: ReadonlyMap<string, string>,
): Record<string, string> {
  const pinned: Record<string, string> = {};
  for (const name of Object.keys(packed)) {
    // A dependency of the engine's copy only: the engine package brings it.
    if (!own.has(name)) continue;
    pinned[name] = own.get(name)!;
  }
  for (const [name, version] of workspace) pinned[name] = version;
  return Object.fromEntries(
    Object.entries(pinned).sort(([a], [b]) => a.localeCompare(b)),
  );
}

/** The dependency fields of a `package.json`. */
export interface NpmDependencies {
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional: true }>;
}

/**
 * Moves the `optional` packages out of `dependencies` into
 * `peerDependencies`, at the same version, each marked optional in
 * `peerDependenciesMeta`.
 *
 * @throws {Error} If an optional peer is not among the dependencies: the
 * list names a package the code no longer imports.
 */
export function withOptionalPeers(
  dependencies: Readonly<Record<string, string>>,
  optional: readonly string[],
): NpmDependencies {
  const kept = { ...dependencies };
  const peers: Record<string, string> = {};
  for (const name of optional) {
    const version = kept[name];
    if (version === undefined) {
      throw new Error(
        `Cannot declare ${name} an optional peer as the package does not import it`,
      );
    }
    peers[name] = version;
    delete kept[name];
  }
  if (optional.length === 0) return { dependencies: kept };
  return {
    dependencies: kept,
    peerDependencies: peers,
    peerDependenciesMeta: Object.fromEntries(
      optional.map((name) => [name, { optional: true }]),
    ),
  };
}

async function run(command: string, args: string[], cwd: string) {
  const output = await new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    const decoder = new TextDecoder();
    throw new Error(
      `${command} ${args.join(" ")} failed: ${decoder.decode(output.stderr)}${
        decoder.decode(output.stdout)
      }`,
    );
  }
  return new TextDecoder().decode(output.stderr);
}

/**
 * Packs every package of the workspace into `outDir` (see the module doc).
 *
 * @returns Each tarball's path and `deno pack`'s report, by package name.
 */
export async function packWorkspace(options: PackOptions): Promise<Packed> {
  await Deno.mkdir(options.outDir, { recursive: true });
  const manifests = new Map<string, DenoJson>();
  for (const member of MEMBERS) {
    manifests.set(member.folder, await readDenoJson(member.folder));
  }
  const packed = new Map<string, PackedTarball>();
  for (const member of MEMBERS) {
    const manifest = manifests.get(member.folder)!;
    const tarball = `${options.outDir}/${member.tarball}`;
    const cwd = new URL(`${member.folder}/`, ROOT).pathname;
    const output = await run(Deno.execPath(), [
      "pack",
      "--allow-dirty",
      ...(options.noSourceMaps ? ["--no-source-maps"] : []),
      "-o",
      tarball,
    ], cwd);
    // The other members the package imports by name, at their versions.
    const workspace = new Map<string, string>();
    for (const [folder, other] of manifests) {
      if (folder !== member.folder && member.folder === ".") {
        workspace.set(other.name, other.version);
      }
    }
    await rewrite(tarball, (json, files) => {
      Object.assign(
        json,
        withOptionalPeers(
          pinnedDependencies(
            json.dependencies ?? {},
            exactVersions(manifest.imports ?? {}),
            workspace,
          ),
          OPTIONAL_PEERS[manifest.name] ?? [],
        ),
      );
      // deno pack copies a member's files beside the root's own; the root
      // imports the member by name instead.
      if (member.folder === ".") files.removeFolder("packages");
    });
    packed.set(manifest.name, { path: tarball, folder: member.folder, output });
  }
  return packed;
}

/** The files of an unpacked tarball that {@linkcode rewrite} may change. */
interface PackageFiles {
  removeFolder(path: string): void;
}

/** A package.json as it is rewritten. */
type PackageJsonText = Partial<NpmDependencies>;

/** Unpacks `tarball`, lets `edit` change its package.json and files, packs it again. */
async function rewrite(
  tarball: string,
  edit: (json: PackageJsonText, files: PackageFiles) => void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "incontext-pack-" });
  try {
    await run("tar", ["-xzf", tarball, "-C", dir], dir);
    const path = `${dir}/package/package.json`;
    const json = JSON.parse(await Deno.readTextFile(path)) as PackageJsonText;
    const removed: string[] = [];
    edit(json, { removeFolder: (folder) => removed.push(folder) });
    for (const folder of removed) {
      await Deno.remove(`${dir}/package/${folder}`, { recursive: true })
        .catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        });
    }
    await Deno.writeTextFile(path, `${JSON.stringify(json, null, 2)}\n`);
    await run("tar", ["-czf", tarball, "-C", dir, "package"], dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const args = Deno.args.filter((arg) => arg !== "--no-source-maps");
  const outDir = args[0] ?? new URL("dist", ROOT).pathname;
  const packed = await packWorkspace({
    outDir,
    noSourceMaps: Deno.args.includes("--no-source-maps"),
  });
  for (const [name, { path }] of packed) console.log(`${name}: ${path}`);
}
