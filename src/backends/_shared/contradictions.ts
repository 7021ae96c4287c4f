/**
 * The models whose exact counts the server's usage contradicted more than
 * once: a backend stops calling its counts of such a model exact, so that
 * budget() counts from usage anchors instead, rather than trust a count
 * known wrong or move to another count of the same template. One
 * difference may be a fluke; a second one is a server that renders
 * another prompt (gpt-oss served under another name, a server flag that
 * changes every prompt).
 *
 * @module
 */
import type { Logger } from "@logtape/logtape";
import type { CountCheck } from "../../core/backend.ts";
import { safeLabel } from "../../core/request.ts";
import { LogLimit } from "../../_internal/log_limit.ts";

/** The differences after which a model's counts are estimates. */
export const DIFFERENCES_TO_ESTIMATE = 2;

/** How many models are tallied: model names are the clients' to choose. */
const MAX_MODELS = 1024;

/** Options for {@linkcode Contradictions}. */
export interface ContradictionsOptions {
  /** The label of the backend's exact counts: only their checks are tallied. */
  readonly source: string;
  /** What counted, for the reason: `"/tokenize"`. */
  readonly counter: string;
  readonly logger: Logger;
  /**
   * The clock that spaces the log lines a minute apart.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** Each model's differences between a backend's counts and the server's usage. */
export class Contradictions {
  readonly #source: string;
  readonly #counter: string;
  readonly #logger: Logger;
  readonly #log: LogLimit;
  /** Differences by model, oldest tallied first. */
  readonly #models = new Map<string, number>();

  /** Creates an empty tally. */
  constructor(options: ContradictionsOptions) {
    this.#source = options.source;
    this.#counter = options.counter;
    this.#logger = options.logger;
    this.#log = new LogLimit(
      options.now === undefined ? {} : { now: options.now },
    );
  }

  /**
   * Tallies a check of one of the backend's exact counts; at the
   * {@linkcode DIFFERENCES_TO_ESTIMATE}th difference, logs that the model
   * now counts by estimate.
   */
  checked(check: CountCheck): void {
    if (check.source !== this.#source || check.counted === check.served) {
      return;
    }
    const key = check.model ?? "";
    const differences = (this.#models.get(key) ?? 0) + 1;
    this.#models.delete(key);
    this.#models.set(key, differences);
    if (this.#models.size > MAX_MODELS) {
      this.#models.delete(this.#models.keys().next().value!);
    }
    if (differences !== DIFFERENCES_TO_ESTIMATE) return;
    this.#log.log(this.#logger, {
      cause: "estimate",
      level: "warn",
      message:
        "model={model} counts by estimate from now on, from usage anchors where a conversation has one: {reason} (last counted={counted} usage={served})",
      first:
        "such moves are logged once a minute at most; incontext check --check-chat on compares the two counts",
      later: "{held} more models moved since the last line of them",
      properties: {
        model: check.model === undefined ? "unknown" : safeLabel(check.model),
        reason: this.#reason(differences),
        counted: check.counted,
        served: check.served,
      },
    });
  }

  /**
   * Why `model`'s counts are estimates, or `undefined` while they are exact.
   *
   * @param model A model name, or `undefined` for requests without one.
   */
  reason(model: string | undefined): string | undefined {
    const differences = this.#models.get(model ?? "") ?? 0;
    return differences >= DIFFERENCES_TO_ESTIMATE
      ? this.#reason(differences)
      : undefined;
  }

  #reason(differences: number): string {
    return `the server's usage contradicted ${differences} of its ${this.#counter} counts: its chat endpoint renders another prompt`;
  }
}
