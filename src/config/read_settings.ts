/**
 * Reading settings from an environment: each variable, else its older
 * name, trimmed, and parsed by its record; every broken rule is collected,
 * named by the variable actually read and never echoing its value.
 *
 * @module
 */
import type { Setting, Settings, ValueOf } from "../_internal/setting.ts";
import type { ConfigIssue } from "../core/config_error.ts";

/** An environment, as an object. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A value as the environment gave it. */
export interface Reading {
  /** The variable the value came from: the setting's own, or its older name. */
  readonly variable: string;
  /** The trimmed value; `""` when blank. */
  readonly value: string;
}

/** What the environment set of `R`, before the rules that relate settings. */
export interface ReadSettings<R extends Settings> {
  /** The values read, by property. */
  readonly values: { -readonly [K in keyof R]?: ValueOf<R[K]> };
  /** The variable each set property was read from, valid or not. */
  readonly names: Map<keyof R, string>;
  /** The properties whose value broke a rule. */
  readonly failed: Set<keyof R>;
}

/**
 * The value of a setting's variable, else of its older name. A set variable
 * wins even when blank, so a blank `INCONTEXT_*` variable is reported rather
 * than silently replaced by a stale older one.
 */
export function read(
  env: Env,
  source: Pick<Setting<unknown>, "variable" | "alias">,
): Reading | undefined {
  for (const variable of [source.variable, source.alias]) {
    if (variable === undefined) continue;
    const raw = env[variable];
    if (raw !== undefined) return { variable, value: raw.trim() };
  }
  return undefined;
}

/**
 * Reads every setting of `records` that `env` sets, adding each broken rule
 * to `issues` in the order of the records.
 */
export function readSettings<R extends Settings>(
  records: R,
  env: Env,
  issues: ConfigIssue[],
): ReadSettings<R> {
  const read: ReadSettings<Settings> = {
    values: {},
    names: new Map(),
    failed: new Set(),
  };
  for (const [key, record] of Object.entries(records)) {
    readSetting(key, record, { env, read, issues });
  }
  return read as ReadSettings<R>;
}

function readSetting(
  key: string,
  record: Setting<unknown>,
  { env, read: into, issues }: {
    readonly env: Env;
    readonly read: ReadSettings<Settings>;
    readonly issues: ConfigIssue[];
  },
): void {
  const reading = read(env, record);
  if (reading === undefined) return;
  into.names.set(key, reading.variable);
  const parsed = reading.value === ""
    ? { rules: ["must not be blank"] }
    : record.parse(reading.value);
  if (parsed.rules.length === 0) {
    into.values[key] = parsed.value;
    return;
  }
  into.failed.add(key);
  for (const rule of parsed.rules) {
    issues.push({ variable: reading.variable, rule });
  }
}
