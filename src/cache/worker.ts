/**
 * The entry of the count cache's worker thread. {@linkcode createCountCache}
 * starts it with `node:worker_threads` and hands it one end of a
 * MessageChannel; it holds the cache's LRU and singleflight table, and the
 * local backend's tokenizers and templates (loaded on its first count, once
 * per model folder), and answers on that port. It is exported only so that
 * it ships with the package:
 * importing it anywhere but in that worker does nothing.
 *
 * @example The worker behind a cache
 * ```ts
 * import { createCountCache } from "@incontext/incontext/cache";
 * import { strictEqual } from "node:assert/strict";
 *
 * await using cache = createCountCache();
 * await cache.getOrCount("key", () => Promise.resolve(5));
 * strictEqual(cache.kind, "worker_threads");
 * ```
 *
 * @module
 */

import {
  isMainThread,
  type MessagePort,
  workerData,
} from "node:worker_threads";
import type { CacheRequest, CountWorkerData } from "./protocol.ts";
import { CountCore } from "./core.ts";
import { loadLocalEngine } from "./engine_loader.ts";

function isCountWorkerData(
  data: unknown,
): data is CountWorkerData & { port: MessagePort } {
  return typeof data === "object" && data !== null &&
    (data as CountWorkerData).kind === "incontext-count-worker";
}

if (!isMainThread && isCountWorkerData(workerData)) {
  const { port, maxEntries, maxKeyBytes } = workerData;
  const session = new CountCore({ maxEntries, maxKeyBytes }, loadLocalEngine)
    .connect((
      response,
    ) => port.postMessage(response));
  port.on("message", (request: CacheRequest) => session.receive(request));
  port.postMessage({ type: "ready" });
}

// A module with no exports still needs a declaration file that TypeScript
// accepts as a module (`import * as worker from ".../count-worker"`).
export {};
