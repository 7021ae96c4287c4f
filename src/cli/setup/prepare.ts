/**
 * What `serve`, `check` and `count` share before they differ: the settings
 * from flags and environment, the plugin modules, the backend and its count
 * cache, the tokenizer files. Every configuration problem on the way becomes
 * one {@linkcode ConfigError}.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { backends } from "../../backends/registry.ts";
import { backendNames } from "../../config/backend_choice.ts";
import { linksOf, selectBackend } from "./backend_chain.ts";
import { LocalBackend } from "../../backends/local/mod.ts";
import { SglangBackend } from "../../backends/sglang/mod.ts";
import { type CountCache, sharedCountCache } from "../../cache/mod.ts";
import { loadBackendModules } from "../../config/plugins.ts";
import type { Backend } from "../../core/backend.ts";
import { ConfigError } from "../../core/config_error.ts";
import {
  type ResolveServerOptions,
  resolveServerSettings,
  type ServerSettings,
} from "./settings.ts";

const logger = getLogger(["incontext", "server"]);

/** The settings, the backend and its cache, ready to count. */
export interface Prepared extends AsyncDisposable {
  readonly settings: ServerSettings;
  readonly backend: Backend;
  readonly cache: CountCache;
}

/**
 * Resolves the settings and builds the backend, or `"help"` for `--help`.
 *
 * @param args The command's arguments.
 * @param env The environment.
 * @param options Whether the upstream is required.
 * @returns The prepared backend; dispose it to stop its cache.
 * @throws {ConfigError} Listing every bad setting.
 */
export async function prepare(
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: Pick<ResolveServerOptions, "requireUpstream"> = {},
): Promise<Prepared | "help"> {
  // Without plugin modules the bundled names are all there is, so an unknown
  // one is reported with the other issues.
  const modules = env.INCONTEXT_BACKEND_MODULES;
  const settings = await resolveServerSettings(args, env, {
    ...options,
    ...(modules === undefined ? { knownBackends: backends.names() } : {}),
  });
  if (settings === "help") return "help";
  const { config } = settings;
  await loadBackendModules(config.backendModules, {
    importModule: (specifier) => import(specifier),
  });
  // A proxy is one thread serving requests: a worker-hosted cache would only
  // add a round trip. Created first, this in-process cache is the shared one
  // the bundled backends then use. The local backend counts inside its
  // cache's core instead: there a worker keeps loading and tokenizing off the
  // thread that serves requests.
  const cache = sharedCountCache({
    maxEntries: config.cacheEntries,
    inProcess: !backendNames(config).includes("local"),
  });
  const dispose = async () => {
    await settings.hermes?.watch?.[Symbol.asyncDispose]();
    await cache[Symbol.asyncDispose]();
  };
  try {
    const backend = await selectBackend(settings);
    await loadFiles(backend);
    return { settings, backend, cache, [Symbol.asyncDispose]: dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

// Fails start-up, not the first request, when the files are missing or not
// the expected ones; logs which files are used (their hashes, never content).
// The local backend loads them where it counts: the cache's worker.
async function loadFiles(backend: Backend): Promise<void> {
  for (const link of linksOf(backend)) await loadFolder(link);
}

async function loadFolder(backend: Backend): Promise<void> {
  if (!(backend instanceof LocalBackend || backend instanceof SglangBackend)) {
    return;
  }
  try {
    const files = await backend.load();
    logger.info(
      "tokenizer files loaded: tokenizer.json sha256={tokenizer} tokenizer_config.json sha256={tokenizerConfig} chat template sha256={template}",
      { ...files },
    );
  } catch (error) {
    throw new ConfigError([{
      variable: "INCONTEXT_TOKENIZER_DIR",
      rule: `cannot be loaded: ${
        error instanceof Error ? error.message : typeof error
      }`,
    }]);
  }
}
