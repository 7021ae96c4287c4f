/**
 * The help of `incontext serve` (and `check`), written from the settings'
 * own records: each flag with the variable it overrides, then every
 * variable, group by group, with its meaning, default and older name.
 *
 * @module
 */
import { type Setting, shownDefault } from "../../_internal/setting.ts";
import { SETTING_GROUPS, SETTINGS } from "../../config/settings.ts";
import { FLAGS } from "./settings.ts";
import { BUNDLED } from "../../backends/registry.ts";

/** Documentation text as a terminal shows it: code without its backquotes. */
function plain(text: string): string {
  return text.replaceAll("`", "");
}

function flagLines(): string {
  const flags = Object.values(FLAGS).map((record) => record.flag!);
  const width = Math.max(...flags.map((flag) => flag.length), "--help".length);
  return [
    ...Object.values(FLAGS).map((record) =>
      `  ${record.flag!.padEnd(width)}  ${record.variable}`
    ),
    `  ${"--help".padEnd(width)}  print this help`,
  ].join("\n");
}

function variableLines(): string {
  const width = Math.max(
    ...Object.values<Setting<unknown>>(SETTINGS).map((r) => r.variable.length),
  );
  return SETTING_GROUPS.map((group) =>
    [
      `  ${group.title[0]!.toUpperCase()}${group.title.slice(1)}:`,
      ...Object.values(group.settings).map((record) =>
        `  ${record.variable.padEnd(width)}  ${plain(record.doc)}; default: ${
          plain(shownDefault(record))
        }${record.alias === undefined ? "" : ` (alias ${record.alias})`}`
      ),
    ].join("\n")
  ).join("\n");
}

/** The help of `incontext serve`: its flags, every variable, its endpoints. */
export const HELP: string =
  `incontext proxy: exact output budgets in front of an OpenAI-compatible server

Usage:
  incontext serve [flags]

Flags (each overrides its variable, listed below with its meaning and default):
${flagLines()}

Variables (a flag above wins over its variable):
${variableLines()}

Backends (INCONTEXT_BACKEND): ${
    BUNDLED.map((entry) => entry.name).join(", ")
  }, or a plugin's (INCONTEXT_BACKEND_MODULES); a chain such as local,vllm moves a model whose count
a response's usage contradicts to the next. See docs/backends.md.

Signals: SIGTERM, SIGINT and SIGHUP stop accepting connections; requests in flight get
INCONTEXT_SHUTDOWN_GRACE_SECONDS to finish. SIGHUP reloads nothing: restart to apply new settings.

Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses are budgeted; every other path is
forwarded; GET /incontext/ (a status page), /incontext/livez, /incontext/readyz (alias /incontext/healthz),
/incontext/metrics, /incontext/context.`;
