// Covers: src/config/settings.ts, src/cli/setup/help.ts, src/_internal/setting.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { type Setting, shownDefault } from "../../src/_internal/setting.ts";
import {
  DEFAULT_CONFIG,
  SETTING_GROUPS,
  SETTINGS,
} from "../../src/config/settings.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { HELP } from "../../src/cli/setup/help.ts";
import { FLAGS } from "../../src/cli/setup/settings.ts";

const RECORDS = Object.values<Setting<unknown>>(SETTINGS);

/** A record as a row of docs/configuration.md: variable, default, meaning. */
function row(record: Setting<unknown>): string[] {
  return [
    record.variable,
    shownDefault(record),
    record.doc +
    (record.alias === undefined ? "" : ` (alias \`${record.alias}\`)`),
  ];
}

/** The rows of every table of docs/configuration.md, table by table. */
async function documentedTables(): Promise<string[][][]> {
  const page = await Deno.readTextFile(
    new URL("../../docs/configuration.md", import.meta.url),
  );
  const tables: string[][][] = [];
  let table: string[][] | undefined;
  for (const line of page.split("\n")) {
    if (!line.startsWith("|")) {
      table = undefined;
      continue;
    }
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    if (cells[0] === "variable" || /^-+$/.test(cells[0]!)) continue;
    if (table === undefined) tables.push(table = []);
    // A default is code where it is a literal value: the record says it plain.
    table.push([cells[0]!, cells[1]!.replace(/^`(.*)`$/, "$1"), cells[2]!]);
  }
  return tables;
}

Deno.test("docs/configuration.md has a table per group of settings, a row per record", async () => {
  deepStrictEqual(
    await documentedTables(),
    SETTING_GROUPS.map((group) => Object.values(group.settings).map(row)),
  );
});

Deno.test("--help lists every variable with its meaning, default and older name, and every flag with its variable", () => {
  const lines = HELP.split("\n");
  for (const record of RECORDS) {
    const line = lines.find((l) => l.startsWith(`  ${record.variable} `));
    ok(line !== undefined, `${record.variable} in --help`);
    ok(line.includes(record.doc.replaceAll("`", "")), line);
    ok(
      line.includes(`default: ${shownDefault(record).replaceAll("`", "")}`),
      line,
    );
    if (record.alias !== undefined) ok(line.includes(record.alias), line);
    if (record.flag !== undefined) {
      ok(
        lines.some((l) =>
          l.startsWith(`  ${record.flag} `) && l.endsWith(` ${record.variable}`)
        ),
        record.flag,
      );
    }
  }
  deepStrictEqual(Object.keys(FLAGS).sort(), [
    "backend",
    "check-chat",
    "context-length",
    "hermes-config",
    "hermes-models",
    "hermes-python",
    "hermes-release",
    "listen",
    "model",
    "on-exhausted",
    "tokenizer-url",
    "upstream",
    "window",
  ]);
});

Deno.test("SETTINGS holds each group's records once, each under its own variable", () => {
  deepStrictEqual(
    Object.keys(SETTINGS),
    SETTING_GROUPS.flatMap((group) => Object.keys(group.settings)),
  );
  const names = RECORDS.flatMap((record) =>
    record.alias === undefined ? [record.variable] : [
      record.variable,
      record.alias,
    ]
  );
  deepStrictEqual(names.filter((n, i) => names.indexOf(n) !== i), []);
});

Deno.test("every default is what loadConfig() reads from its own text", () => {
  for (const [key, record] of Object.entries<Setting<unknown>>(SETTINGS)) {
    if (record.default === undefined) continue;
    const text = shownDefault(record).replace(
      "VERSION",
      () => String(record.default).split("/")[1]!,
    );
    if (Array.isArray(record.default)) continue; // `none`: the empty list
    const config = loadConfig({ [record.variable]: text }, {
      registry: { requirements: () => [] },
    });
    deepStrictEqual(config[key as keyof typeof config], record.default, key);
    strictEqual(
      DEFAULT_CONFIG[key as keyof typeof DEFAULT_CONFIG],
      record.default,
    );
  }
});
