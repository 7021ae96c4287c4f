import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import * as root from "../mod.ts";
import { Backend } from "../mod.ts";
import * as configEntry from "../src/config/mod.ts";
import * as anchored from "../src/backends/anchored/mod.ts";
import * as anthropic from "../src/backends/anthropic/mod.ts";
import * as gemini from "../src/backends/gemini/mod.ts";
import * as llamacpp from "../src/backends/llamacpp/mod.ts";
import * as local from "../src/backends/local/mod.ts";
import * as openai from "../src/backends/openai/mod.ts";
import * as sglang from "../src/backends/sglang/mod.ts";
import * as tgi from "../src/backends/tgi/mod.ts";
import * as vllm from "../src/backends/vllm/mod.ts";

const ROOT = new URL("../", import.meta.url);

/** Each bundled backend's entry, by the name the registry selects it with. */
const ENTRIES: Record<string, Record<string, unknown>> = {
  vllm,
  local,
  anchored,
  llamacpp,
  tgi,
  sglang,
  anthropic,
  gemini,
  openai,
};

const { backends, loadConfig } = configEntry;

/**
 * The entries a backend's errors are imported from: the contract's errors
 * (`CountError`, `TemplateRejectedError`) are the root's, `ConfigError` is
 * `./config`'s. A bundled backend has no error of its own, so its entry
 * exports none.
 */
const ERROR_HOMES: readonly Record<string, unknown>[] = [root, configEntry];

/** Errors of the language, which no entry exports. */
const BUILT_IN = new Set(["Error", "TypeError", "RangeError"]);

const CONFIG = loadConfig({
  INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize",
  INCONTEXT_TOKENIZER_DIR: "/nonexistent/model",
  INCONTEXT_ANTHROPIC_API_KEY: "sk-ant-test",
  INCONTEXT_GEMINI_API_KEY: "gemini-test",
});

type BackendClass = abstract new (...args: never[]) => Backend;

function isBackendClass(value: unknown): value is BackendClass {
  return typeof value === "function" && value.prototype instanceof Backend;
}

function isErrorClass(value: unknown): boolean {
  return typeof value === "function" &&
    (value === Error || value.prototype instanceof Error);
}

/** The error classes named by an `@throws` anywhere in the entry's documentation. */
async function documentedErrors(entry: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", `src/backends/${entry}/mod.ts`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "null",
  }).output();
  strictEqual(output.code, 0, `deno doc ${entry} failed`);
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (typeof node === "object" && node !== null) {
      const tag = node as { kind?: unknown; tsType?: { repr?: unknown } };
      if (tag.kind === "throws" && typeof tag.tsType?.repr === "string") {
        found.add(tag.tsType.repr);
      }
      Object.values(node).forEach(walk);
    }
  };
  walk(JSON.parse(new TextDecoder().decode(output.stdout)));
  return [...found].filter((type) => !BUILT_IN.has(type)).sort();
}

Deno.test("every backend entry exports <Name>Backend and <name>FromConfig, and each error it documents is the root's or ./config's", async (t) => {
  deepStrictEqual(Object.keys(ENTRIES).sort(), backends.names().sort());
  for (const [name, entry] of Object.entries(ENTRIES)) {
    await t.step(name, async () => {
      const classes = Object.entries(entry).filter(([, value]) =>
        isBackendClass(value)
      );
      strictEqual(classes.length, 1, "one Backend class");
      const [className, backendClass] = classes[0]! as [string, BackendClass];
      ok(className.endsWith("Backend"), className);
      // One casing rule: the class's prefix with its first letter lowercased.
      const prefix = className.slice(0, -"Backend".length);
      const factoryName = `${prefix[0]!.toLowerCase()}${
        prefix.slice(1)
      }FromConfig`;
      const factory = entry[factoryName];
      strictEqual(typeof factory, "function", `${factoryName} is exported`);
      ok(
        (factory as (c: typeof CONFIG) => Backend)(CONFIG) instanceof
          backendClass,
      );
      ok(await backends.load(name, CONFIG) instanceof backendClass);

      const exported = Object.keys(entry)
        .filter((key) => isErrorClass(entry[key]));
      deepStrictEqual(exported, [], "an error it exports again");
      const documented = await documentedErrors(name);
      ok(documented.includes("CountError"), "every count documents CountError");
      for (const error of documented) {
        ok(
          ERROR_HOMES.some((home) => isErrorClass(home[error])),
          `${error} is exported by the root or ./config`,
        );
      }
    });
  }
});
