/**
 * Calls to the local counting engine in a count cache's core (its worker,
 * or in process), typed for the backends that count locally: the local
 * backend, and SGLang's local render.
 *
 * @module
 */
import type { JsonObject } from "../../core/request.ts";
import { CountError } from "../../core/errors.ts";
import type { CountCache } from "../../cache/types.ts";
import { engineChannelOf } from "../../cache/capability.ts";
import type { EngineChannel } from "../../cache/engine_slot.ts";
import type { EngineCall } from "@incontext/engine";
import type { LocalCountJob, ModelSpec } from "@incontext/engine";
import type { FilesSha256 } from "@incontext/engine";
import type { DecodeForm } from "@incontext/engine";

/** The local engine of one cache's core. */
export interface RemoteEngine {
  /** Counts a request in the core; `signal` rejects this caller only. */
  count(job: LocalCountJob, signal?: AbortSignal): Promise<number>;
  /** Renders a chat request's prompt in the core; `signal` rejects this caller only. */
  render(job: LocalCountJob, signal?: AbortSignal): Promise<string>;
  /** Loads a model folder in the core. */
  load(spec: ModelSpec): Promise<FilesSha256>;
  /** The ids of a `/tokenize` body, computed in the core. */
  tokenize(spec: ModelSpec, body: JsonObject): Promise<number[]>;
  /** The text or token strings of ids, computed in the core. */
  decode(
    spec: ModelSpec,
    ids: readonly number[],
    form: DecodeForm,
  ): Promise<string | string[]>;
}

/**
 * The local engine of `cache`'s core, or `undefined` when the cache runs
 * no engine (`null`, or a cache of another make): the caller then counts on
 * its own thread.
 */
export function remoteEngine(
  cache: CountCache | null,
): RemoteEngine | undefined {
  const channel = engineChannelOf(cache);
  return channel === undefined ? undefined : engineOver(channel);
}

function engineOver(channel: EngineChannel): RemoteEngine {
  const run = <T>(
    call: EngineCall,
    valid: (value: unknown) => boolean,
    signal?: AbortSignal,
  ): Promise<T> =>
    channel.runEngine(call, signal).then((value) => {
      if (!valid(value)) {
        throw new CountError("The count worker answered out of protocol");
      }
      return value as T;
    });
  return {
    count: (job, signal) =>
      run({ op: "count", ...job }, (v) => typeof v === "number", signal),
    render: (job, signal) =>
      run({ op: "render", ...job }, (v) => typeof v === "string", signal),
    load: (spec) =>
      run({ op: "load", spec }, (v) => typeof v === "object" && v !== null),
    tokenize: (spec, body) =>
      run({ op: "tokenize", spec, body }, Array.isArray),
    decode: (spec, ids, form) =>
      run(
        { op: "decode", spec, ids, form },
        (v) => typeof v === "string" || Array.isArray(v),
      ),
  };
}
