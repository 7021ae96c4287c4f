/**
 * The public surface as `deno doc --json` documents it: for each entry of a
 * package's `exports`, the names its page shows and what each one is. The
 * surface test pins these names; the Node proof counts them per entry.
 *
 * @module
 */
import { strictEqual } from "node:assert/strict";

/** One name an entry documents. */
export interface DocumentedName {
  readonly name: string;
  /** The first declaration's kind: `class`, `function`, `variable`, `interface`, `typeAlias`, ... */
  readonly kind: string;
}

/** The kinds that exist at run time, as `Object.keys()` of the module sees them. */
const VALUE_KINDS: ReadonlySet<string> = new Set([
  "class",
  "function",
  "variable",
  "enum",
  "namespace",
]);

/** Whether a documented name is a value (a class, function, constant), not only a type. */
export function isValue(name: DocumentedName): boolean {
  return VALUE_KINDS.has(name.kind);
}

interface DocJson {
  readonly nodes: Record<string, {
    readonly symbols?: readonly {
      readonly name: string;
      readonly declarations: readonly { readonly kind: string }[];
    }[];
  }>;
}

/** The `exports` of the `deno.json` in `folder`: entry name to file, relative to `folder`. */
export async function packageExports(
  folder: URL,
): Promise<Record<string, string>> {
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", folder)),
  ) as { exports: Record<string, string> };
  return manifest.exports;
}

/**
 * The names each entry of the package in `folder` documents, by entry name
 * (`"."`, `"./vllm"`, ...), in the order `deno doc` lists them.
 */
export async function documentedSurface(
  folder: URL,
): Promise<Map<string, DocumentedName[]>> {
  const exports = await packageExports(folder);
  const files = Object.values(exports);
  // One run for every entry: the output is keyed by each file's URL.
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...files],
    cwd: folder,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  strictEqual(output.code, 0, decoder.decode(output.stderr));
  const doc = JSON.parse(decoder.decode(output.stdout)) as DocJson;
  const surface = new Map<string, DocumentedName[]>();
  for (const [entry, file] of Object.entries(exports)) {
    const node = doc.nodes[new URL(file, folder).href];
    surface.set(
      entry,
      (node?.symbols ?? []).map((symbol) => ({
        name: symbol.name,
        kind: symbol.declarations[0]?.kind ?? "unknown",
      })),
    );
  }
  return surface;
}

/** The entries that document each name, for names documented by more than one. */
export function sharedNames(
  surface: ReadonlyMap<string, readonly DocumentedName[]>,
): Map<string, string[]> {
  const homes = new Map<string, string[]>();
  for (const [entry, names] of surface) {
    for (const { name } of names) {
      homes.set(name, [...(homes.get(name) ?? []), entry]);
    }
  }
  return new Map([...homes].filter(([, entries]) => entries.length > 1));
}
