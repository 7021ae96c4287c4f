/**
 * Console logging for the command line: LogTape's console sink for the
 * `incontext` categories, so a server's log lines reach standard error and
 * standard output as LogTape formats them.
 *
 * @module
 */
import { configure, getConsoleSink } from "@logtape/logtape";

/** Sends the `incontext` loggers to the console, from `info` up. */
export async function configureConsoleLog(): Promise<void> {
  await configure({
    sinks: { console: getConsoleSink() },
    loggers: [
      { category: ["incontext"], lowestLevel: "info", sinks: ["console"] },
      {
        category: ["logtape", "meta"],
        lowestLevel: "warning",
        sinks: ["console"],
      },
    ],
  });
}
