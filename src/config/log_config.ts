/**
 * The command line's log settings. The command line sits above this layer,
 * so its own settings are declared here, where the configuration can read
 * them.
 *
 * @module
 */
import type { SettingsOf } from "../_internal/setting.ts";
import { oneOf } from "../_internal/setting_parsers.ts";

/** The log settings' part of the configuration. */
export type LogConfig = {
  readonly logLevel: "debug" | "info" | "warning" | "error";
  readonly logFormat: "text" | "json";
};

/** The log settings, by the property each one sets. */
export const LOG_SETTINGS: SettingsOf<LogConfig> = {
  logLevel: {
    variable: "INCONTEXT_LOG_LEVEL",
    default: "info",
    doc: "the lowest level logged: `debug`, `info`, `warning` or `error`",
    parse: oneOf(
      ["debug", "info", "warning", "error"],
      "must be debug, info, warning or error",
    ),
  },
  logFormat: {
    variable: "INCONTEXT_LOG_FORMAT",
    default: "text",
    doc: "log records as `text` lines or `json` lines (LogTape's JSON Lines)",
    parse: oneOf(["text", "json"], "must be text or json"),
  },
};
