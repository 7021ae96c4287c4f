/**
 * The process-wide registry with the bundled backends. Each name is bound to
 * an `import()` of its own folder, so importing this registry loads no
 * backend, and selecting one loads that backend alone.
 *
 * @module
 */
import {
  type BackendFactory,
  type BackendRegistry,
  createBackendRegistry,
} from "./backend_registry.ts";
import { BACKEND_SETTINGS } from "./_shared/config.ts";
import type { RequirableSetting } from "./_shared/from_config.ts";

/** A bundled backend as its folder declares it (see `_shared/from_config.ts`). */
export interface DeclaredBackend {
  readonly name: string;
  readonly requires: readonly RequirableSetting[];
  readonly factory: BackendFactory;
}

/**
 * A bundled backend before its module is loaded: what the registry must know
 * at once (its name, and the settings `loadConfig()` reports when missing),
 * and how to load the rest. Each folder declares the same name and settings
 * beside its factory; a test holds the two declarations equal.
 */
export interface BundledEntry {
  readonly name: string;
  readonly requires: readonly RequirableSetting[];
  readonly load: () => Promise<DeclaredBackend>;
}

/**
 * The bundled backends, in the order they are registered. The specifiers
 * are literals so that Deno, JSR and the npm build see each module.
 */
export const BUNDLED: readonly BundledEntry[] = [
  {
    name: "vllm",
    requires: ["tokenizerUrl"],
    load: async () => (await import("./vllm/vllm_backend.ts")).VLLM,
  },
  {
    name: "local",
    requires: ["tokenizerDir"],
    load: async () => (await import("./local/local_backend.ts")).LOCAL,
  },
  {
    name: "anchored",
    requires: [],
    load: async () => (await import("./anchored/anchored_backend.ts")).ANCHORED,
  },
  {
    name: "llamacpp",
    requires: ["tokenizerUrl"],
    load: async () => (await import("./llamacpp/llamacpp_backend.ts")).LLAMACPP,
  },
  {
    name: "tgi",
    requires: ["tokenizerUrl"],
    load: async () => (await import("./tgi/tgi_backend.ts")).TGI,
  },
  {
    name: "sglang",
    requires: ["tokenizerUrl", "tokenizerDir"],
    load: async () => (await import("./sglang/sglang_backend.ts")).SGLANG,
  },
  {
    name: "anthropic",
    requires: ["anthropicApiKey"],
    load: async () =>
      (await import("./anthropic/anthropic_backend.ts")).ANTHROPIC,
  },
  {
    name: "gemini",
    requires: ["geminiApiKey"],
    load: async () => (await import("./gemini/gemini_backend.ts")).GEMINI,
  },
  {
    name: "openai",
    requires: [],
    load: async () => (await import("./openai/openai_backend.ts")).OPENAI,
  },
];

/**
 * The process-wide backend registry, with the bundled backends registered
 * under their names; third-party modules register theirs with
 * `backends.plugin(name, factory)`. Selecting a bundled name imports that
 * backend's module on first use.
 *
 * @example Selecting a bundled backend from the environment
 * ```ts
 * import { backends, loadConfig } from "@incontext/incontext/config";
 * import { ok, strictEqual } from "node:assert/strict";
 *
 * ok(backends.names().includes("vllm"));
 * const config = loadConfig({ INCONTEXT_TOKENIZER_URL: "http://127.0.0.1:8000/tokenize" });
 * const backend = await backends.load(config.backend, config);
 * strictEqual(backend.source, "vllm-tokenize");
 * ```
 */
export const backends: BackendRegistry = createBackendRegistry();
for (const entry of BUNDLED) {
  backends.plugin(
    entry.name,
    async (config) => (await entry.load()).factory(config),
    { requires: entry.requires.map((key) => BACKEND_SETTINGS[key].variable) },
  );
}
