/**
 * Imports the backend modules `INCONTEXT_BACKEND_MODULES` names. Apart from
 * `loadConfig()` because it runs code, through an importer the application
 * passes.
 *
 * @module
 */
import { ConfigError } from "../core/config_error.ts";
import { errorType } from "../core/error_type.ts";
import type { SettingsOf } from "../_internal/setting.ts";
import { commaItems } from "../_internal/setting_parsers.ts";

const SPECIFIER = /^(?:jsr|npm|file):\S/;

/** The plugin modules' part of the configuration. */
export type PluginConfig = {
  readonly backendModules: readonly string[];
};

/** The plugin modules' setting, by the property it sets. */
export const PLUGIN_SETTINGS: SettingsOf<PluginConfig> = {
  backendModules: {
    variable: "INCONTEXT_BACKEND_MODULES",
    default: Object.freeze([]) as readonly string[],
    doc:
      "comma-separated `jsr:`, `npm:` or `file:` modules that register backends",
    parse: (value) => {
      const items = commaItems(value);
      const rules = items.flatMap((item, index) =>
        item === ""
          ? [`item ${index + 1} must not be empty`]
          : SPECIFIER.test(item)
          ? []
          : [`item ${index + 1} must be a jsr:, npm: or file: module specifier`]
      );
      return rules.length === 0
        ? { value: Object.freeze(items) as readonly string[], rules }
        : { rules };
    },
  },
};

/** Options for {@linkcode loadBackendModules}. */
export interface LoadBackendModulesOptions {
  /**
   * Imports one module specifier. The published library imports no
   * specifier it does not name itself; the application supplies the
   * importer, usually `(specifier) => import(specifier)`.
   */
  readonly importModule: (specifier: string) => Promise<unknown>;
}

/**
 * Imports third-party backend modules (the `INCONTEXT_BACKEND_MODULES`
 * specifiers), each of which registers its backends with `backends.plugin()`
 * when imported: the counterpart of Python entry points. Call it after
 * `loadConfig()` and before `backends.load()`.
 *
 * @param specifiers Module specifiers (`jsr:`, `npm:`, `file:`), imported in order.
 * @param options The importer.
 * @returns A promise that settles once every module is imported.
 * @throws {ConfigError} Naming every specifier that failed to import (with the error's type only).
 *
 * @example Importing modules, and naming the ones that fail
 * ```ts
 * import { ConfigError, loadBackendModules } from "@incontext/incontext/config";
 * import { deepStrictEqual, rejects } from "node:assert/strict";
 *
 * const imported: string[] = [];
 * await loadBackendModules(["jsr:@acme/incontext-backend"], {
 *   importModule: (specifier) => Promise.resolve(void imported.push(specifier)),
 * });
 * deepStrictEqual(imported, ["jsr:@acme/incontext-backend"]);
 * await rejects(
 *   loadBackendModules(["npm:missing"], {
 *     importModule: () => Promise.reject(new TypeError("not found")),
 *   }),
 *   ConfigError,
 * );
 * ```
 */
export async function loadBackendModules(
  specifiers: readonly string[],
  options: LoadBackendModulesOptions,
): Promise<void> {
  const issues = [];
  for (const specifier of specifiers) {
    try {
      await options.importModule(specifier);
    } catch (error) {
      issues.push({
        variable: "INCONTEXT_BACKEND_MODULES",
        rule: `module '${specifier}' failed to import (${errorType(error)})`,
      });
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
}
