/**
 * The contract of a registry of counting backends: names bound to lazy
 * factories, each built at most once. A factory may be asynchronous, so a
 * name can stand for a module that is imported only when it is selected:
 * the bundled registry in `backends/registry.ts` binds each bundled name to
 * an `import()` of that backend's folder alone.
 *
 * @module
 */
import type { Backend } from "../core/backend.ts";
import { defaultsOf } from "../_internal/setting.ts";
import { BACKEND_SETTINGS, type BackendConfig } from "./_shared/config.ts";

/**
 * Builds a backend from the loaded configuration, at once or once its module
 * is imported. Called at most once per registry, unless it fails.
 */
export type BackendFactory = (
  config: BackendConfig,
) => Backend | Promise<Backend>;

/** The backends' settings with every default: what a factory gets without a configuration. */
const DEFAULTS: BackendConfig = defaultsOf(BACKEND_SETTINGS);

/** What a registered backend needs from the environment. */
export interface BackendPluginOptions {
  /**
   * Environment variables the backend cannot work without; {@linkcode loadConfig}
   * reports each one missing when this backend is selected.
   *
   * @default []
   */
  readonly requires?: readonly string[];
}

/**
 * A backend name was registered twice.
 *
 * @example Catching a duplicate registration
 * ```ts
 * import { createBackendRegistry, DuplicateBackendError } from "@incontext/incontext/config";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { throws } from "node:assert/strict";
 *
 * const registry = createBackendRegistry();
 * const factory = () => new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" });
 * registry.plugin("acme", factory);
 * throws(() => registry.plugin("acme", factory), DuplicateBackendError);
 * ```
 */
export class DuplicateBackendError extends Error {
  /** The name registered twice. */
  readonly backendName: string;
  /**
   * Creates the error.
   *
   * @param name The name registered twice.
   */
  constructor(name: string) {
    super(`Cannot register backend '${name}' as it is already registered`);
    this.name = "DuplicateBackendError";
    this.backendName = name;
  }
}

/**
 * No backend is registered under the selected name.
 *
 * @example Listing the names that exist
 * ```ts
 * import { backends, UnknownBackendError } from "@incontext/incontext/config";
 * import { ok, rejects } from "node:assert/strict";
 *
 * await rejects(backends.load("nope"), (error: unknown) => {
 *   ok(error instanceof UnknownBackendError);
 *   ok(error.message.includes("vllm"));
 *   return true;
 * });
 * ```
 */
export class UnknownBackendError extends Error {
  /** The name that was selected. */
  readonly backendName: string;
  /** The names that are registered. */
  readonly registered: readonly string[];
  /**
   * Creates the error.
   *
   * @param name The selected name.
   * @param registered The registered names.
   */
  constructor(name: string, registered: readonly string[]) {
    super(
      `Cannot select backend '${name}' as it is not registered: registered backends are ${
        registered.map((n) => `'${n}'`).join(", ") || "none"
      }`,
    );
    this.name = "UnknownBackendError";
    this.backendName = name;
    this.registered = registered;
  }
}

/** A named set of lazily built backends. */
export interface BackendRegistry {
  /**
   * Registers a lazy factory under `name`.
   *
   * @throws {DuplicateBackendError} When `name` is already registered.
   */
  plugin(
    name: string,
    factory: BackendFactory,
    options?: BackendPluginOptions,
  ): void;
  /**
   * Builds the backend registered under `name` on the first call and returns
   * the same instance afterwards; concurrent first calls share one build.
   * Only this name's factory is ever called, so only its module is loaded. A
   * factory that fails is called again by the next call.
   *
   * @param name The registered name.
   * @param config The configuration the factory reads; every setting's default when omitted.
   * @returns The backend.
   * @throws {UnknownBackendError} When `name` is not registered.
   * @throws The factory's error, such as a `ConfigError` naming a missing variable.
   */
  load(name: string, config?: BackendConfig): Promise<Backend>;
  /** The registered names, in registration order. */
  names(): string[];
  /** The environment variables the named backend requires (empty when unknown). */
  requirements(name: string): readonly string[];
}

interface Entry {
  readonly factory: BackendFactory;
  readonly requires: readonly string[];
  building?: Promise<Backend>;
}

/**
 * Creates an empty backend registry. Most code uses the shared
 * {@linkcode backends}; a separate registry suits tests and embedders.
 *
 * @returns A registry with no backends.
 *
 * @example Registering and selecting a backend
 * ```ts
 * import { createBackendRegistry } from "@incontext/incontext/config";
 * import { VllmBackend } from "@incontext/incontext/vllm";
 * import { strictEqual } from "node:assert/strict";
 *
 * const registry = createBackendRegistry();
 * registry.plugin("local-vllm", () => new VllmBackend({ url: "http://127.0.0.1:8000/tokenize" }));
 * const backend = await registry.load("local-vllm");
 * strictEqual(await registry.load("local-vllm"), backend);
 * strictEqual(backend.source, "vllm-tokenize");
 * ```
 */
export function createBackendRegistry(): BackendRegistry {
  const entries = new Map<string, Entry>();
  return {
    plugin(name, factory, options = {}) {
      if (entries.has(name)) throw new DuplicateBackendError(name);
      entries.set(name, { factory, requires: [...(options.requires ?? [])] });
    },
    load(name, config) {
      const entry = entries.get(name);
      if (entry === undefined) {
        return Promise.reject(
          new UnknownBackendError(name, [...entries.keys()]),
        );
      }
      if (entry.building === undefined) {
        const building = build(entry.factory, config ?? DEFAULTS);
        entry.building = building;
        // A missing setting or a module that failed to load may be fixed by
        // the next call: only a built backend is kept.
        building.catch(() => {
          if (entry.building === building) delete entry.building;
        });
      }
      return entry.building;
    },
    names() {
      return [...entries.keys()];
    },
    requirements(name) {
      return entries.get(name)?.requires ?? [];
    },
  };
}

async function build(
  factory: BackendFactory,
  config: BackendConfig,
): Promise<Backend> {
  return await factory(config);
}
