// Covers: src/cli/setup/variables.ts, src/cli/setup/settings.ts
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { CONFIG_VARIABLES, DEFAULT_CONFIG } from "../../../src/core/config.ts";
import { VARIABLES } from "../../../src/cli/setup/variables.ts";
import { HELP } from "../../../src/cli/setup/settings.ts";

/** name -> default of every variable row in the tables of docs/configuration.md. */
async function documentedDefaults(): Promise<Map<string, string>> {
  const page = await Deno.readTextFile(
    new URL("../../../docs/configuration.md", import.meta.url),
  );
  const rows = new Map<string, string>();
  for (const line of page.split("\n")) {
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    if (!/^INCONTEXT_[A-Z0-9_]+$/.test(cells[0] ?? "")) continue;
    // The first table has a legacy-alias column before the default.
    const value = cells.length === 4 ? cells[2]! : cells[1]!;
    rows.set(cells[0]!, value.replaceAll("`", ""));
  }
  return rows;
}

Deno.test("the tables of docs/configuration.md and --help list the same variables with the same defaults", async () => {
  const documented = new Map(VARIABLES.map((v) => [v.name, v.default]));
  deepStrictEqual(await documentedDefaults(), documented);
  for (const variable of VARIABLES) {
    const line = HELP.split("\n").find((l) =>
      l.startsWith(`  ${variable.name} `)
    );
    ok(line !== undefined, `${variable.name} in --help`);
    ok(line.includes(`default: ${variable.default}`), line);
    if (variable.alias !== undefined) ok(line.includes(variable.alias), line);
  }
});

Deno.test("every setting of the configuration is documented under its variable and alias", () => {
  const documented = new Map(VARIABLES.map((v) => [v.name, v]));
  const names = Object.values(CONFIG_VARIABLES).map((v) => v.name);
  for (const { name, alias } of Object.values(CONFIG_VARIABLES)) {
    const doc = documented.get(name);
    ok(doc !== undefined, `${name} is documented`);
    strictEqual(doc.alias, alias, `${name}'s alias`);
  }
  deepStrictEqual(
    VARIABLES.map((v) => v.name).filter((name) => !names.includes(name)),
    [],
  );
});

Deno.test("the documented defaults are the configuration's defaults", () => {
  const byName = new Map(VARIABLES.map((v) => [v.name, v.default]));
  for (
    const [key, variable] of Object.entries(CONFIG_VARIABLES) as [
      keyof typeof CONFIG_VARIABLES,
      { name: string },
    ][]
  ) {
    const value = DEFAULT_CONFIG[key];
    if (value === undefined) continue;
    const expected = Array.isArray(value)
      ? (value.length === 0 ? "none" : value.join(","))
      : typeof value === "boolean"
      ? (value ? "on" : "off")
      : String(value).replace(/^incontext\/.*$/, "incontext/VERSION");
    strictEqual(byName.get(variable.name), expected, variable.name);
  }
});
