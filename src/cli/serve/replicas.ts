/**
 * The shared store of `incontext serve`'s replicas, when
 * `INCONTEXT_SHARED_STORE` names one: the anchors the proxy records into and
 * reads, the count cache's second tier, and the backend that fetches a
 * request's anchor before the anchors are read. Without it, nothing here
 * runs and the proxy is what it is alone.
 *
 * @module
 */
import { AnchoredBackend } from "../../backends/anchored/mod.ts";
import { attachCountTier } from "../../cache/capability.ts";
import type { Backend } from "../../core/backend.ts";
import type { ProxyReporter } from "../../proxy/options.ts";
import { redisConnection } from "../../replicas/connection.ts";
import { sharedCountTier } from "../../replicas/count_tier.ts";
import { PrefetchingBackend } from "../../replicas/prefetch_backend.ts";
import { SharedAnchorStore } from "../../replicas/anchors.ts";
import { SharedStore } from "../../replicas/store.ts";
import type { Prepared } from "../setup/prepare.ts";
import { ConfigError } from "../../core/config_error.ts";

/** The proxy's parts that go through the shared store. */
export interface SharedLayer extends AsyncDisposable {
  /** The backend to hand the proxy: the prepared one, fetching anchors first. */
  readonly backend: Backend;
  /** The anchor store to hand the proxy. */
  readonly anchors: SharedAnchorStore;
  /** What the proxy's health and metrics endpoints report of the store. */
  readonly reporter: ProxyReporter;
}

/**
 * Opens the shared layer the configuration names, or `undefined` when it
 * names none. It connects in the background: a store that is not there yet
 * is an outage like any other, not a reason to stop.
 *
 * @param prepared The settings, the backend and the count cache.
 * @returns The layer; dispose it to close its connection.
 */
export async function openSharedLayer(
  prepared: Prepared,
): Promise<SharedLayer | undefined> {
  const { config } = prepared.settings;
  if (config.sharedStore === undefined) return undefined;
  const store = new SharedStore({
    connection: await redisConnection(config.sharedStore, {
      ...(config.sharedStoreCa === undefined
        ? {}
        : { ca: await readStoreCa(config.sharedStoreCa) }),
    }),
    timeoutMs: config.sharedTimeoutMs,
    ttlSeconds: config.sharedTtlSeconds,
    ...(config.sharedStoreSecret === undefined
      ? {}
      : { secret: config.sharedStoreSecret }),
  });
  const anchors = new SharedAnchorStore({
    maxEntries: config.anchorEntries,
    shared: store,
  });
  attachCountTier(prepared.cache, sharedCountTier(store));
  // The anchored backend reads the store the proxy records into: the same
  // backend, over the shared anchors (its factory sets nothing else).
  const anchored = prepared.backend instanceof AnchoredBackend;
  const inner = anchored ? new AnchoredBackend({ anchors }) : prepared.backend;
  return {
    backend: new PrefetchingBackend(inner, { anchors, anchorsFirst: anchored }),
    anchors,
    reporter: {
      name: "sharedStore",
      status: () => store.status(),
      refresh: () => store.refresh(),
      metricLines: () => store.metricLines(),
    },
    async [Symbol.asyncDispose]() {
      attachCountTier(prepared.cache, undefined);
      await store[Symbol.asyncDispose]();
    },
  };
}

/** The CA file's PEM text; unreadable, a configuration error naming it. */
async function readStoreCa(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ConfigError([{
      variable: "INCONTEXT_SHARED_STORE_CA",
      rule: `must name a readable PEM file (${
        error instanceof Error ? error.name : typeof error
      })`,
    }]);
  }
}
