/**
 * The engine the bundled count caches plug into their cores: the local
 * counting engine, whose modules load only when a local count first comes.
 *
 * @module
 */
import type { Engine, EngineStore } from "./engine_slot.ts";

/** Loads the local counting engine over a core's store (an `EngineLoader`). */
export async function loadLocalEngine(store: EngineStore): Promise<Engine> {
  const { createEngine } = await import("@incontext/engine");
  // The core's calls are its own clones: their messages can keep their
  // template values from render to render.
  return createEngine(store, { ownsPayloads: true });
}
