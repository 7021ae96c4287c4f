/**
 * A chain of backends tried in order, model by model: a model counts with
 * the first backend until a response's usage contradicts one of its
 * counts, then with the next. It is a backend of its own because the
 * proxy, budget() and the count cache only ever see one; the checks reach
 * it through {@linkcode Backend.countChecked}. Every move is counted; the
 * log names the first of each pair of backends, then one a minute at most:
 * model names are the clients' to choose, and could be new on each request.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import {
  Backend,
  type CapField,
  type CapReading,
  type CountCheck,
  type CountOptions,
  type CountResult,
  type JsonObject,
  type OutputFieldOptions,
  type OutputLimitOptions,
  type ReadCapsOptions,
  type RequestKind,
} from "./backend.ts";
import { TemplateRejectedError } from "./errors.ts";
import { errorType } from "./error_type.ts";
import { effectiveField, safeLabel } from "./request.ts";
import { LogLimit } from "../_internal/log_limit.ts";

const logger = getLogger(["incontext", "chain"]);

/** Options for {@linkcode BackendChain}. */
export interface BackendChainOptions {
  /**
   * How many verified counts (counts a response's usage confirmed) a model
   * makes on a later backend before the first backend is tried again.
   * Unset, a model stays where a difference sent it until the process ends.
   *
   * @default undefined
   */
  readonly fallbackTurns?: number;
  /**
   * How many models the chain remembers away from the first backend; past
   * it, the model moved longest ago starts again from the first.
   *
   * @default 1024
   */
  readonly maxModels?: number;
  /**
   * The clock, in milliseconds, that spaces the warnings of moves between
   * the same two backends a minute apart.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** Where one model stands in the chain. */
interface Place {
  /** The backend it counts with. */
  readonly index: number;
  /** Verified counts on that backend, when it is not the first. */
  readonly turns: number;
}

const FIRST: Place = { index: 0, turns: 0 };

/**
 * Counts with the first of its backends, and moves a model to the next one
 * when the server's usage shows a count of the current one wrong: the
 * `local` backend first, vLLM's `/tokenize` behind it, is
 * `INCONTEXT_BACKEND=local,vllm`. A count that fails goes to the next
 * backend for that request alone; a request the chat template rejects does
 * not (the server would reject it too). Caps, fields and request kinds are
 * the first backend's: every backend of a chain counts for the same server.
 * Each count carries the source of the backend that made it.
 *
 * @example A model moves on when the server counts otherwise
 * ```ts
 * import { BackendChain } from "@incontext/incontext/proxy";
 * import { FakeBackend } from "@incontext/incontext/testing";
 * import { strictEqual } from "node:assert/strict";
 *
 * const chain = new BackendChain([
 *   new FakeBackend({ count: 10, source: "first" }),
 *   new FakeBackend({ count: 12, source: "second" }),
 * ]);
 * const request = { model: "m", messages: [] };
 * const options = { contextLength: 8192 };
 * strictEqual((await chain.count(request, options)).source, "first");
 * chain.countChecked({ model: "m", source: "first", counted: 10, served: 12 });
 * strictEqual((await chain.count(request, options)).tokens, 12);
 * strictEqual(chain.backendFor("m").source, "second");
 * strictEqual(chain.backendFor("other").source, "first");
 * ```
 */
export class BackendChain extends Backend {
  /** The backends, first tried first. */
  readonly links: readonly Backend[];
  readonly #source: string;
  readonly #turns: number | undefined;
  readonly #maxModels: number;
  /** The models away from the first backend, moved longest ago first. */
  readonly #places = new Map<string, Place>();
  /** Each count label seen, with the backend that gave it. */
  readonly #labels = new Map<string, number>();
  /** The moves between two backends, by their indices, in the order of the first. */
  readonly #moves = new Map<
    string,
    { from: number; to: number; count: number }
  >();
  /** The log lines of moves, limited per pair of backends. */
  readonly #log: LogLimit;

  /**
   * Creates a chain.
   *
   * @param links The backends, first tried first.
   * @param options The turns on a later backend, and how many models are remembered.
   * @throws {TypeError} If `links` is not a non-empty array of backends.
   * @throws {RangeError} If `fallbackTurns` or `maxModels` is not a positive integer.
   */
  constructor(links: readonly Backend[], options: BackendChainOptions = {}) {
    super();
    if (
      !Array.isArray(links) || links.length === 0 ||
      !links.every((link) => link instanceof Backend)
    ) {
      throw new TypeError(
        "Cannot create the backend chain as 'links' must be a non-empty array of backends",
      );
    }
    const { fallbackTurns, maxModels = 1024 } = options;
    for (
      const [name, value] of [["fallbackTurns", fallbackTurns], [
        "maxModels",
        maxModels,
      ]] as const
    ) {
      if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
        throw new RangeError(
          `Cannot create the backend chain as '${name}' must be a positive integer: current value is ${value}`,
        );
      }
    }
    this.links = Object.freeze([...links]);
    this.#source = links.map((link) => link.source).join(",");
    this.#turns = fallbackTurns;
    this.#maxModels = maxModels;
    this.#log = new LogLimit(
      options.now === undefined ? {} : { now: options.now },
    );
  }

  /** The sources of the backends, joined with commas: `local-tokenizer,vllm-tokenize`. */
  override get source(): string {
    return this.#source;
  }

  /** None: not every backend of a chain compares the server's context length. */
  override get servedContext(): string | undefined {
    return undefined;
  }

  /**
   * The backend that counts `model`'s requests now.
   *
   * @param model A model name, as the request names it; `undefined` for none.
   * @returns One of {@linkcode BackendChain.links}.
   */
  backendFor(model: string | undefined): Backend {
    return this.links[this.#placeOf(model ?? "").index]!;
  }

  /**
   * Counts with the backend the request's model counts with now, and with
   * the next ones in turn while a count fails for another reason than the
   * chat template rejecting the request.
   *
   * @param request The request body, never mutated.
   * @param options The context length, the kind, an abort signal.
   * @returns The count, labelled with the source of the backend that made it.
   * @throws What the last backend tried threw.
   */
  override async count(
    request: JsonObject,
    options: CountOptions,
  ): Promise<CountResult> {
    let index = this.#placeOf(modelOf(request) ?? "").index;
    for (;;) {
      const link = this.links[index]!;
      try {
        return this.#labelled(await link.count(request, options), index);
      } catch (error) {
        const next = this.links[index + 1];
        if (
          next === undefined || error instanceof TemplateRejectedError ||
          options.signal?.aborted
        ) throw error;
        logger.debug(
          "count failed, the next backend counts this request: model={model} source={source} next={next} error={error}",
          {
            model: modelName(modelOf(request)),
            source: link.source,
            next: next.source,
            error: errorType(error),
          },
        );
        index += 1;
      }
    }
  }

  /**
   * Moves the model on to the next backend when the server's count differs
   * from the current backend's; with `fallbackTurns`, sends it back to the
   * first after that many verified counts on a later one. A check of a
   * count another backend made (before a move, or for a count that failed
   * over) moves nothing. A check of the last backend's count goes to it
   * as well.
   *
   * @param check The model, the count's label and both numbers.
   */
  override countChecked(check: CountCheck): void {
    const key = check.model ?? "";
    const place = this.#placeOf(key);
    const counter = this.#labels.get(check.source);
    // The last backend has no next to send the model to: it hears the
    // check itself, and may stop calling its counts of the model exact.
    if (counter === this.links.length - 1) {
      this.links[counter]!.countChecked(check);
    }
    if (counter !== place.index) return;
    if (check.counted !== check.served) this.#moveOn(key, place, check);
    else if (place.index > 0) this.#verified(key, place);
  }

  /**
   * Why the backend that counts `model`'s requests now counts them by
   * estimate, when it says so.
   *
   * @param model A model name, or `undefined` for the configured model.
   * @returns That backend's reason, or `undefined`.
   */
  override estimateReason(model: string | undefined): string | undefined {
    return this.backendFor(model).estimateReason(model);
  }

  /**
   * How often models moved from one backend to another: on to the next
   * after a difference, back to the first after `fallbackTurns`.
   *
   * @returns One entry per pair of backends a model moved between, named by
   * their sources, in the order of their first move.
   */
  moves(): {
    readonly from: string;
    readonly to: string;
    readonly count: number;
  }[] {
    return [...this.#moves.values()].map(({ from, to, count }) => ({
      from: this.links[from]!.source,
      to: this.links[to]!.source,
      count,
    }));
  }

  /**
   * Forgets the cached counts of every backend.
   *
   * @returns A promise that settles once every clear has taken effect.
   */
  override async clearCache(): Promise<void> {
    await Promise.all(this.links.map((link) => link.clearCache()));
  }

  /** The first backend's field: every backend of a chain counts for the same server. */
  override outputBudgetField(
    field: CapField,
    options?: OutputFieldOptions,
  ): string {
    return this.links[0]!.outputBudgetField(field, options);
  }

  /** The first backend's reading of a cap. */
  override coerceOutputBudget(value: unknown): number | undefined {
    return this.links[0]!.coerceOutputBudget(value);
  }

  /** The first backend's output limit. */
  override outputBudgetLimit(
    request: JsonObject,
    options: OutputLimitOptions,
  ): number | undefined {
    return this.links[0]!.outputBudgetLimit(request, options);
  }

  /** The first backend's kind of `request`. */
  override requestKind(request: JsonObject): RequestKind | undefined {
    return this.links[0]!.requestKind(request);
  }

  /** The first backend's cap reading. */
  override readCaps(request: JsonObject, options: ReadCapsOptions): CapReading {
    return this.links[0]!.readCaps(request, options);
  }

  /** The first backend's rewrite. */
  override writeCap(
    request: JsonObject,
    field: string,
    value: number,
  ): JsonObject {
    return this.links[0]!.writeCap(request, field, value);
  }

  #placeOf(key: string): Place {
    return this.#places.get(key) ?? FIRST;
  }

  /** The count as a result carrying its label, which is remembered as the backend's. */
  #labelled(value: number | CountResult, index: number): CountResult {
    const link = this.links[index]!;
    const result = typeof value === "number"
      ? { tokens: value, estimatedTokens: 0, source: link.source }
      : { ...value, source: value.source || link.source };
    if (!this.#labels.has(result.source)) {
      this.#labels.set(result.source, index);
    }
    return result;
  }

  #moveOn(key: string, place: Place, check: CountCheck): void {
    const next = this.links[place.index + 1];
    // The last backend has nowhere to send the model: the difference is
    // in the proxy's metrics and log all the same.
    if (next === undefined) return;
    this.#put(key, { index: place.index + 1, turns: 0 });
    this.#moved(place.index, place.index + 1, {
      level: "warn",
      message:
        "model={model} now counts with {next}: a count by {source} differed from the server's usage (counted={counted} usage={served}); {until}",
      properties: {
        model: modelName(check.model),
        next: next.source,
        source: check.source,
        counted: check.counted,
        served: check.served,
        until: this.#turns === undefined
          ? "until restart"
          : `for ${this.#turns} verified counts, then ${
            this.links[0]!.source
          } again`,
      },
    });
  }

  #verified(key: string, place: Place): void {
    const turns = place.turns + 1;
    if (this.#turns === undefined || turns < this.#turns) {
      this.#places.set(key, { index: place.index, turns });
      return;
    }
    this.#places.delete(key);
    this.#moved(place.index, 0, {
      level: "info",
      message:
        "model={model} counts with {first} again after {turns} verified counts by {source}",
      properties: {
        model: modelName(key === "" ? undefined : key),
        first: this.links[0]!.source,
        turns,
        source: this.links[place.index]!.source,
      },
    });
  }

  /**
   * Counts a move between two backends and logs it: the first between
   * them at its level, then one a minute at most.
   */
  #moved(
    from: number,
    to: number,
    record: {
      readonly level: "warn" | "info";
      readonly message: string;
      readonly properties: Readonly<Record<string, unknown>>;
    },
  ): void {
    const cause = `${from}>${to}`;
    const pair = this.#moves.get(cause) ?? { from, to, count: 0 };
    pair.count += 1;
    this.#moves.set(cause, pair);
    this.#log.log(logger, {
      ...record,
      cause,
      first:
        "every move is counted in incontext_backend_chain_moves_total, and those between these two backends are logged once a minute at most",
      later:
        "{held} more moves between these two backends since the last line of them, in incontext_backend_chain_moves_total",
    });
  }

  #put(key: string, place: Place): void {
    this.#places.delete(key);
    this.#places.set(key, place);
    if (this.#places.size <= this.#maxModels) return;
    const oldest = this.#places.keys().next().value!;
    this.#places.delete(oldest);
    logger.debug(
      "model={model} counts with {first} again: the chain remembers {max} models at most",
      {
        model: modelName(oldest === "" ? undefined : oldest),
        first: this.links[0]!.source,
        max: this.#maxModels,
      },
    );
  }
}

/** The request's model as the server reads it, or `undefined`. */
function modelOf(request: JsonObject): string | undefined {
  const model = effectiveField(request, "model");
  return typeof model === "string" ? model : undefined;
}

/** A model name fit for a log line. */
function modelName(model: string | undefined): string {
  return model === undefined ? "unknown" : safeLabel(model);
}
