/**
 * Following a Hermes `config.yaml` as it changes: the window Hermes
 * answered at start-up serves every request until a newer answer is known.
 * The file's modification time is checked at most once a second, from the
 * request path but never in its way: the check and the new question to
 * Hermes run in the background.
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { askHermes, type AskHermesOptions, type HermesAnswer } from "./ask.ts";

/** Options for {@linkcode watchHermesWindow}. */
export interface WatchHermesOptions extends AskHermesOptions {
  /**
   * The clock, in milliseconds.
   *
   * @default Date.now
   */
  readonly now?: () => number;
  /**
   * The least time between two checks of the file, in milliseconds.
   *
   * @default 1000
   */
  readonly intervalMs?: number;
  /**
   * Checks a new answer before it replaces the one in force; what it throws
   * keeps the old answer and reaches `onError`.
   */
  readonly accept?: (answer: HermesAnswer) => void;
  /** Called with each new answer once it is in force. */
  readonly onChange?: (answer: HermesAnswer) => void;
  /** Called when a changed file could not be asked about; the old answer stays. */
  readonly onError?: (error: unknown) => void;
}

/** The window of a Hermes config that is followed as it changes. */
export interface HermesWindowWatch extends AsyncDisposable {
  /**
   * The answer in force; starts a background check of the file when the
   * last one is at least `intervalMs` old.
   */
  current(): HermesAnswer;
  /** Resolves once no check is running. */
  settled(): Promise<void>;
}

async function signature(path: string): Promise<string> {
  try {
    const { mtimeMs, size, ino } = await stat(path);
    return `${mtimeMs}:${size}:${ino}`;
  } catch {
    return "unreadable";
  }
}

/**
 * Asks Hermes for its window now (see {@linkcode askHermes}) and again
 * whenever the config file changes.
 *
 * @param options What {@linkcode askHermes} takes, and the clock and observers.
 * @returns The watch; dispose it to wait for a check in flight.
 * @throws {ConfigError} When the first answer cannot be had.
 *
 * @example Following the config of the Hermes installed here
 * ```ts ignore
 * // Not run as a test: it needs a Hermes installation.
 * import { watchHermesWindow } from "@incontext/incontext/hermes";
 *
 * await using watch = await watchHermesWindow({
 *   configPath: `${Deno.env.get("HOME")}/.hermes/config.yaml`,
 *   onChange: (answer) => console.log(`window now ${answer.window}`),
 * });
 * console.log(watch.current().window);
 * ```
 */
export async function watchHermesWindow(
  options: WatchHermesOptions,
): Promise<HermesWindowWatch> {
  const { now = Date.now, intervalMs = 1000, configPath } = options;
  let known = await signature(configPath);
  let answer = await askHermes(options);
  options.accept?.(answer);
  let checked = now();
  let running: Promise<void> | undefined;

  async function check(): Promise<void> {
    const seen = await signature(configPath);
    if (seen === known) return;
    // A failed question is asked again only once the file changes again.
    known = seen;
    try {
      const next = await askHermes(options);
      options.accept?.(next);
      answer = next;
      options.onChange?.(next);
    } catch (error) {
      options.onError?.(error);
    }
  }

  return {
    current(): HermesAnswer {
      const time = now();
      if (running === undefined && time - checked >= intervalMs) {
        checked = time;
        running = check().finally(() => {
          running = undefined;
        });
      }
      return answer;
    },
    async settled(): Promise<void> {
      await running;
    },
    async [Symbol.asyncDispose](): Promise<void> {
      await running;
    },
  };
}
