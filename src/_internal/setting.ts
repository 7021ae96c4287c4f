/**
 * A setting as one record: its environment variable, an older name, its
 * default, its line of documentation and its parser. Each layer declares the
 * records of the settings it owns beside the module that reads them, typed
 * by its part of the configuration (`SettingsOf<ProxyConfig>`), so that the
 * compiler holds the two together; the `./config` entry assembles them into
 * `loadConfig()`, and `--help` and docs/configuration.md are written from
 * the same records.
 *
 * @module
 */

/**
 * What a parser made of a value: the value, or the rules it broke. A value
 * may come with rules when a later rule can still be checked on it, so that
 * each broken rule is reported at once.
 */
export interface Parsed<T> {
  readonly value?: T;
  readonly rules: readonly string[];
}

/** Reads a trimmed, non-blank value. */
export type Parse<T> = (text: string) => Parsed<T>;

/** One setting: where it is read from, what it means, how it is read. */
export interface Setting<T> {
  /** The environment variable, such as `INCONTEXT_LISTEN`. */
  readonly variable: string;
  /** An older name, read when the variable is unset. */
  readonly alias?: string;
  /** The command-line flag that overrides the variable, with its value's name: `--listen HOST:PORT`. */
  readonly flag?: string;
  /** The value when the variable is unset; absent, the setting is then unset. */
  readonly default?: T;
  /** The default in words, where the value alone does not say it (`none (from host)`). */
  readonly shownDefault?: string;
  /** What the setting means, in one line. */
  readonly doc: string;
  /** Reads the value. */
  readonly parse: Parse<T>;
}

/**
 * The records of a configuration's settings, one per property of `C`: a
 * property that is never unset has a default, an optional one has none.
 */
export type SettingsOf<C> = {
  readonly [K in keyof C]-?: undefined extends C[K]
    ? Setting<Exclude<C[K], undefined>> & { readonly default?: undefined }
    : Setting<C[K]> & { readonly default: C[K] };
};

/** Records by the name of the property each one sets. */
export type Settings = { readonly [key: string]: Setting<unknown> };

/** The value a setting's record gives. */
export type ValueOf<S> = S extends Setting<infer T> ? T : never;

/** The properties of `C` that are never unset: those whose records have a default. */
export type Defaults<C> = {
  readonly [K in keyof C as undefined extends C[K] ? never : K]: C[K];
};

/** Every default of `records`, by property. */
export function defaultsOf<C>(records: SettingsOf<C>): Defaults<C> {
  const defaults: Record<string, unknown> = {};
  for (const [key, record] of Object.entries<Setting<unknown>>(records)) {
    if (record.default !== undefined) defaults[key] = record.default;
  }
  return Object.freeze(defaults) as Defaults<C>;
}

/** The default as the documentation states it: `none` when there is none. */
export function shownDefault(record: Setting<unknown>): string {
  if (record.shownDefault !== undefined) return record.shownDefault;
  const value = record.default;
  if (value === undefined) return "none";
  if (typeof value === "boolean") return value ? "on" : "off";
  if (Array.isArray(value)) {
    return value.length === 0 ? "none" : value.join(",");
  }
  return String(value);
}
