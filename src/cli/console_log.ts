/**
 * Console logging for the command line: LogTape's console sink for the
 * `incontext` categories, at the level `INCONTEXT_LOG_LEVEL` gives, as text
 * or as JSON lines (`INCONTEXT_LOG_FORMAT`), with LogTape's own formatters.
 *
 * @module
 */
import {
  configure,
  getConsoleSink,
  getTextFormatter,
  jsonLinesFormatter,
  type LogLevel,
} from "@logtape/logtape";
import { LOG_SETTINGS, type LogConfig } from "../config/log_config.ts";
import { readSettings } from "../config/read_settings.ts";

/** How the command line logs. */
export interface LogSettings {
  /** The lowest level written. @default "info" */
  readonly level?: LogConfig["logLevel"];
  /** `text` lines or `json` lines. @default "text" */
  readonly format?: LogConfig["logFormat"];
  /**
   * Buffers records and writes them from a timer, off the request path: a
   * console write blocks while a slow reader (a pipe, a terminal) catches
   * up. Whoever sets it calls LogTape's `dispose()` before exiting, which
   * writes what is still buffered.
   *
   * @default false
   */
  readonly nonBlocking?: boolean;
}

/**
 * The log settings an environment asks for. A value that is not valid is
 * left at its default here: logging starts before the configuration is
 * checked, and `loadConfig()` then reports the bad value with the others.
 *
 * @param env The environment.
 * @returns The settings.
 */
export function logSettings(
  env: Record<string, string | undefined>,
): LogSettings {
  const { logLevel: level, logFormat: format } =
    readSettings(LOG_SETTINGS, env, []).values;
  return {
    ...(level === undefined ? {} : { level }),
    ...(format === undefined ? {} : { format }),
  };
}

/** Sends the `incontext` loggers to the console, from `level` up. */
export async function configureConsoleLog(
  settings: LogSettings = {},
): Promise<void> {
  const { level = "info", format = "text", nonBlocking = false } = settings;
  const formatter = format === "json"
    ? jsonLinesFormatter
    // Strings bare: `upstream=http://...`, as an operator would write them.
    : getTextFormatter({ value: "bare", category: "." });
  await configure({
    sinks: { console: getConsoleSink({ formatter, nonBlocking }) },
    loggers: [
      {
        category: ["incontext"],
        lowestLevel: level satisfies LogLevel,
        sinks: ["console"],
      },
      {
        category: ["logtape", "meta"],
        lowestLevel: "warning",
        sinks: ["console"],
      },
    ],
  });
}
