// Reuse of a `for` loop's item outputs between renders: a conversation that
// grew by one message renders its earlier messages as before, so their loop
// bodies need not run again. An item's body is recorded once (its output,
// what it read from outside itself, what it wrote there); a later render
// reuses the output when every recorded read gives the same value again.
//
// What a body depends on, and how each is checked:
// - the loop item: the memo key (the same value object: the count core
//   keeps one converted value per message object), so reading it is free;
// - anything else it reads from the loop's scope and the scopes around it
//   (variables, namespace attributes, `loop.*`, the clock): each outermost
//   expression that reads only such things, and nothing the body made, is
//   kept with its value and evaluated again before reuse;
// - globals: constant across renders, as long as no enclosing scope defines
//   the same name, which is checked;
// - what it writes outside itself (variables of the loop's scope, namespace
//   attributes): replayed on reuse;
// - a variable of the loop's scope the body sets and never reads again: what
//   its value read is not kept (the value reaches nothing the item shows).
// A body that throws, or that does something these rules cannot follow
// (a namespace used whole, a macro defined in the loop's scope, a mutable
// value stored outside), is not kept, and runs every time.
import { make, type Value } from "./values.ts";
import { isMutable } from "./loop_fields.ts";
import { METHODS } from "./methods.ts";
import { type Node, resolve, Scope } from "./scope.ts";

/** An expression read from outside the body, with the value it gave. */
export interface Read {
  readonly node: Node;
  readonly value: Value;
}

/** A `{% set name.key = value %}` the body made on a namespace outside itself. */
export interface KeyWrite {
  readonly name: string;
  readonly key: string;
  readonly value: Value;
}

/** A write the body made outside itself. */
type Write = { readonly name: string; readonly value: Value } | KeyWrite;

/** Where a loop's items run: what {@linkcode holds} checks an entry against. */
export interface LoopScopes {
  /** The scope the item runs in. */
  readonly scope: Scope;
  /** Evaluates an expression in a scope, as the interpreter does. */
  readonly evaluate: (node: Node, scope: Scope) => Value;
  /** Whether a scope between the item's and the root defines `name` now. */
  readonly shadows: (name: string) => boolean;
  /** Whether `name`, looked up from the item's scope, is a namespace now. */
  readonly isNamespace: (name: string) => boolean;
  /** Whether an expression cannot raise in the item's scope (never_raises.ts). */
  readonly neverRaises: (node: Node) => boolean;
}

/** One item's recorded body. */
export interface Entry {
  readonly output: string;
  readonly reads: readonly Read[];
  /**
   * Reads whose values reached only a variable never read again: a reuse
   * needs only that evaluating them would not raise.
   */
  readonly dead: readonly Read[];
  /** Globals read: no scope between the loop and the root may define them. */
  readonly globals: readonly string[];
  /** Names whose namespace the body wrote: they must name a namespace again. */
  readonly namespaces: readonly string[];
  readonly writes: readonly Write[];
  /** The namespace writes among `writes`: all of a reuse that outlives the item. */
  readonly keyWrites: readonly KeyWrite[];
  /** What loop_runs.ts derives from the entry, kept with it once derived. */
  derived?: unknown;
}

/** Reads within one expression under evaluation. */
interface Frame {
  /** It read something from outside the body. */
  external: boolean;
  /** It read something the body made (or wrote). */
  internal: boolean;
  /** The outermost outside-only expressions read within it. */
  reads: Read[] | null;
  /** External writes before it started: one during it makes it internal. */
  readonly writesBefore: number;
  /** It read the clock's function: only a check that calls it again reads the clock again. */
  impure: boolean;
}

/** Globals whose value is not constant: the clock. */
export const IMPURE_GLOBALS: ReadonlySet<string> = new Set(["strftime_now"]);

/**
 * Macro functions by the node that defined them: two macros of one node
 * behave alike as far as the memo follows them (a body reading what a macro
 * defined outside it closes over is not kept).
 */
const macroNodes = new WeakMap<object, Node>();

/** Marks a macro's function value with its definition. */
export function markMacro(value: Value, node: Node): void {
  macroNodes.set(value, node);
}

/** Memo entries per `for` node, per item value. */
const memos = new WeakMap<Node, WeakMap<object, Entry>>();

/** The memo of a `for` node. */
export function memoOf(node: Node): WeakMap<object, Entry> {
  let memo = memos.get(node);
  if (memo === undefined) memos.set(node, memo = new WeakMap());
  return memo;
}

/**
 * Hits and misses since the process started (tests read them); `skips`
 * counts the hits taken without checking the item's reads (loop_runs.ts).
 */
export const memoStats = { hits: 0, misses: 0, unkept: 0, skips: 0 };

/** Where the reads and writes of a `{% set %}` start: see {@linkcode Recorder.mark}. */
export interface SetMark {
  readonly reads: number;
  readonly writes: number;
}

/** What one item's body is doing while it is recorded. */
export class Recorder {
  readonly #scope: Scope;
  readonly #chain: ReadonlySet<Scope>;
  readonly #root: Scope;
  readonly #itemNames: ReadonlySet<string>;
  readonly #frames: Frame[] = [];
  readonly #ownNames = new Set<string>();
  readonly #ownKeys = new Map<object, Set<string>>();
  readonly #globals = new Set<string>();
  readonly #writes: Write[] = [];
  readonly #namespaces = new Set<string>();
  /** Reads of values set to a loop-scope variable not read since, by name. */
  readonly #pending = new Map<string, Read[]>();
  /** Reads of such values once the variable was read. */
  readonly #committed: Read[] = [];
  /** Scopes with this serial or a higher one were made by the body. */
  readonly #firstMade = Scope.nextSerial();
  #kept = true;

  /**
   * @param scope The loop's scope, where the body runs.
   * @param chain The loop's scope and every scope above it, root last.
   * @param itemNames The loop variables bound to the item.
   */
  constructor(
    scope: Scope,
    chain: readonly Scope[],
    itemNames: ReadonlySet<string>,
  ) {
    this.#scope = scope;
    this.#chain = new Set(chain);
    this.#root = chain.at(-1)!;
    this.#itemNames = itemNames;
    this.#frames.push(this.#frame());
  }

  #frame(): Frame {
    return {
      external: false,
      internal: false,
      reads: null,
      writesBefore: this.#writes.length,
      impure: false,
    };
  }

  #top(): Frame {
    return this.#frames[this.#frames.length - 1]!;
  }

  /** The body did something the memo cannot follow: run it every time. */
  unkeep(): void {
    this.#kept = false;
  }

  /** Starts an expression. */
  push(): void {
    this.#frames.push(this.#frame());
  }

  /** Ends an expression evaluated in `scope` that gave `value`. */
  pop(node: Node, scope: Scope, value: Value): void {
    const frame = this.#frames.pop()!;
    const parent = this.#top();
    const outsideOnly = frame.external && !frame.internal &&
      frame.writesBefore === this.#writes.length &&
      (!frame.impure || callsImpure(node)) && this.#pathSafe(node, scope);
    if (isMutable(value) && node.type !== "Identifier") {
      // A namespace or loop reached other than by name: its later reads
      // cannot be followed.
      this.unkeep();
    } else if (outsideOnly) {
      (parent.reads ??= []).push({ node, value });
      parent.external = true;
      return;
    }
    if (frame.reads !== null) (parent.reads ??= []).push(...frame.reads);
    parent.external ||= frame.external;
    parent.impure ||= frame.impure;
    // Writes during it: its value may hang on them.
    parent.internal ||= frame.internal ||
      frame.writesBefore !== this.#writes.length;
  }

  /**
   * Whether checking `node` again before the item runs can only read what
   * it would read at this point of the item: any path it may take (not only
   * the one taken now: `a or b` may read `b` next time) names no variable
   * the item has set or that a scope it made holds, calls no macro (whose
   * body could), and reads no namespace key the item wrote.
   */
  #pathSafe(node: Node, scope: Scope): boolean {
    const info = staticInfo(node);
    if (info === null) return false;
    for (const name of info.names) {
      if (this.#ownNames.has(name)) return false;
      for (let s: Scope | undefined = scope; s !== this.#scope; s = s.parent) {
        if (s === undefined || s.variables.has(name)) return false;
      }
    }
    for (const name of info.callees) {
      if (resolve(scope, name) !== this.#root) return false;
    }
    for (const [name, key] of info.keys) {
      const object = resolve(scope, name)?.variables.get(name);
      if (object !== undefined && this.#ownKeys.get(object)?.has(key)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Looks an identifier's name up from `scope` and classifies the read in the current
   * expression. `whole`: the value is used as it is (not as the object of
   * an attribute read), so a namespace or `loop` cannot be followed.
   */
  lookup(node: Node, scope: Scope, whole: boolean): Value {
    const name = node["value"] as string;
    const found = resolve(scope, name);
    const value = found?.variables.get(name) ??
      make("UndefinedValue", undefined);
    const frame = this.#top();
    if (found !== undefined && found.serial >= this.#firstMade) {
      // Found in a scope the body made (a macro's, an inner loop's).
      frame.internal = true;
    } else if (found === undefined || found === this.#root) {
      // A global (or an undefined name): the same unless shadowed.
      this.#globals.add(name);
      if (IMPURE_GLOBALS.has(name)) {
        frame.external = true;
        frame.impure = true;
      }
    } else if (!this.#chain.has(found) || !this.#descends(scope)) {
      // A macro defined outside the body, reading the scopes it closes
      // over: a read the body's own scopes cannot check again.
      this.unkeep();
    } else if (found === this.#scope && this.#ownNames.has(name)) {
      frame.internal = true;
      // What the value read now reaches what the item shows.
      const pending = this.#pending.get(name);
      if (pending !== undefined) {
        this.#committed.push(...pending);
        this.#pending.delete(name);
      }
    } else if (found === this.#scope && this.#itemNames.has(name)) {
      // The item itself: the memo key.
    } else {
      frame.external = true;
      // As the object of an attribute read, a plain value is kept as a
      // read of its own (the attribute read may turn out internal); a
      // namespace's or loop's attribute is checked by the attribute read.
      if (!whole && !isMutable(value)) {
        (frame.reads ??= []).push({ node, value });
      }
    }
    if (whole && isMutable(value)) this.unkeep();
    return value;
  }

  /**
   * Whether names looked up from `scope` go through the loop's scope: it is
   * the loop's scope, or a scope the body made under it (not the scope of a
   * macro defined outside the body, which closes over the scope it was
   * defined in).
   */
  #descends(scope: Scope): boolean {
    let s: Scope | undefined = scope;
    while (s !== undefined && s.serial >= this.#firstMade) s = s.parent;
    return s === this.#scope;
  }

  /**
   * An attribute read of a namespace or `loop` found outside the body:
   * internal once the body wrote it.
   */
  readKey(object: Value, key: string): void {
    if (this.#ownKeys.get(object)?.has(key)) this.#top().internal = true;
  }

  /** A macro defined in `scope`: not followed when outside the body. */
  definedMacro(scope: Scope): void {
    if (this.#chain.has(scope)) this.unkeep();
  }

  /** Marks the start of a `{% set %}`'s value, for {@linkcode wroteName}. */
  mark(): SetMark {
    return {
      reads: this.#frames[0]!.reads?.length ?? 0,
      writes: this.#writes.length,
    };
  }

  /**
   * A `{% set name = value %}` in `scope`. With the `mark` taken before the
   * value was evaluated: a statement of the body setting a variable of the
   * loop's scope, with no write on the way, keeps what the value read
   * pending until the variable is read. A variable never read again reaches
   * nothing the item shows (the loop's scope is cleared before the next
   * item, and dropped after the loop), so a reuse need not read it again.
   */
  wroteName(scope: Scope, name: string, value: Value, mark?: SetMark): void {
    if (scope.serial >= this.#firstMade) return;
    if (scope !== this.#scope || !storable(value)) this.unkeep();
    const root = this.#frames[0]!;
    if (
      mark !== undefined && this.#frames.length === 1 &&
      this.#writes.length === mark.writes && root.reads !== null &&
      root.reads.length > mark.reads
    ) {
      const pending = this.#pending.get(name) ?? [];
      pending.push(...root.reads.splice(mark.reads));
      this.#pending.set(name, pending);
    }
    this.#ownNames.add(name);
    this.#writes.push({ name, value });
  }

  /** A `{% set name.key = value %}` on `object`, found as `name` from `scope`. */
  wroteKey(scope: Scope, object: Value, write: KeyWrite): void {
    const { name, key, value } = write;
    const found = resolve(scope, name);
    if (found === undefined || found.serial >= this.#firstMade) return;
    if (!this.#chain.has(found) || !this.#descends(scope)) {
      this.unkeep();
      return;
    }
    if (
      found === this.#scope && this.#ownNames.has(name) || !storable(value)
    ) this.unkeep();
    this.#namespaces.add(name);
    let keys = this.#ownKeys.get(object);
    if (keys === undefined) this.#ownKeys.set(object, keys = new Set());
    keys.add(key);
    this.#writes.push(write);
  }

  /** The recorded body, or `undefined` if it cannot be reused. */
  entry(output: string): Entry | undefined {
    const root = this.#frames[0]!;
    if (!this.#kept || this.#frames.length !== 1 || root.impure) {
      return undefined;
    }
    return {
      output,
      reads: [...root.reads ?? [], ...this.#committed],
      dead: [...this.#pending.values()].flat(),
      globals: [...this.#globals],
      namespaces: [...this.#namespaces],
      writes: this.#writes,
      keyWrites: this.#writes.filter((write) => "key" in write),
      derived: undefined,
    };
  }
}

/** What an expression may read, whatever path it takes. */
export interface StaticInfo {
  /** Every variable name in it. */
  readonly names: ReadonlySet<string>;
  /** Names used other than as `name.key`. */
  readonly bare: ReadonlySet<string>;
  /** Names it calls. */
  readonly callees: ReadonlySet<string>;
  /** `name.key` attribute reads. */
  readonly keys: readonly (readonly [string, string])[];
  /** Those of `keys` other than in `compared`. */
  readonly keyUses: readonly (readonly [string, string])[];
  /** `name[loop.index0 + offset]` item reads (or `loop.index`, one more). */
  readonly indexed: readonly (readonly [string, number])[];
  /**
   * `loop.index0 + offset` compared with `name` or `name.key` (`<`, `==`,
   * ...): `=name` or `.name.key`, and the offset.
   */
  readonly compared: readonly (readonly [string, number])[];
}

const staticInfos = new WeakMap<Node, StaticInfo | null>();

/** A {@linkcode StaticInfo} being filled in by {@linkcode collect}. */
interface Collected {
  readonly names: Set<string>;
  readonly bare: Set<string>;
  readonly callees: Set<string>;
  readonly keys: [string, string][];
  readonly keyUses: [string, string][];
  readonly indexed: [string, number][];
  readonly compared: [string, number][];
}

/** An expression's {@linkcode StaticInfo}, or null for a shape not followed. */
export function staticInfo(node: Node): StaticInfo | null {
  let info = staticInfos.get(node);
  if (info === undefined) {
    const found: Collected = {
      names: new Set(),
      bare: new Set(),
      callees: new Set(),
      keys: [],
      keyUses: [],
      indexed: [],
      compared: [],
    };
    info = collect(node, found) ? found : null;
    staticInfos.set(node, info);
  }
  return info;
}

const COMPARISONS: ReadonlySet<string> = new Set([
  "<",
  ">",
  "<=",
  ">=",
  "==",
  "!=",
]);

/**
 * The root of `name` or `name.key` compared with a loop index (`=name`,
 * `.name.key`), noted as read; null for anything else.
 */
function comparedRoot(node: Node, found: Collected): string | null {
  if (node.type === "Identifier") {
    if (node["value"] === "loop") return null;
    found.names.add(node["value"] as string);
    return `=${node["value"]}`;
  }
  const object = node["object"] as Node;
  if (
    node.type !== "MemberExpression" || node["computed"] ||
    object.type !== "Identifier"
  ) return null;
  const name = object["value"] as string;
  const key = (node["property"] as Node)["value"] as string;
  // Two loop fields compared: the fields are read as they are.
  if (name === "loop") return null;
  found.names.add(name);
  found.keys.push([name, key]);
  return `.${name}.${key}`;
}

/** `loop.index0 + k` (or `- k`, or `loop.index`, one more): `k`; else null. */
function loopOffset(node: Node): number | null {
  const field = (member: Node): number | null => {
    if (
      member.type !== "MemberExpression" || member["computed"] ||
      (member["object"] as Node).type !== "Identifier" ||
      (member["object"] as Node)["value"] !== "loop"
    ) return null;
    const name = (member["property"] as Node)["value"];
    return name === "index0" ? 0 : name === "index" ? 1 : null;
  };
  if (node.type !== "BinaryExpression") return field(node);
  const operator = (node["operator"] as { value: string }).value;
  const base = field(node["left"] as Node);
  const right = node["right"] as Node;
  if (
    base === null || right.type !== "IntegerLiteral" ||
    (operator !== "+" && operator !== "-")
  ) return null;
  const k = right["value"] as number;
  return operator === "+" ? base + k : base - k;
}

/** The name a call calls: `f(...)`. */
function calleeName(node: Node): string | undefined {
  const callee = node["callee"] as Node;
  return callee.type === "Identifier" ? callee["value"] as string : undefined;
}

/** Whether `node` calls a global that reads the clock. */
function callsImpure(node: Node): boolean {
  if (node.type !== "CallExpression") return false;
  const name = calleeName(node);
  return name !== undefined && IMPURE_GLOBALS.has(name);
}

const LITERALS = new Set([
  "IntegerLiteral",
  "FloatLiteral",
  "StringLiteral",
]);

/** `x.name(...)` of a name {@linkcode callMethod} dispatches on the receiver. */
function isMethodCall(callee: Node): boolean {
  if (callee.type !== "MemberExpression" || callee["computed"]) return false;
  const property = callee["property"] as Node;
  return property.type === "Identifier" &&
    METHODS.has(property["value"] as string);
}

/**
 * Adds what `node` may read to `found`; false for a shape not followed.
 * One `found` travels down the whole walk, so a node costs no object of its own.
 */
function collect(node: Node | undefined | null, found: Collected): boolean {
  if (node === undefined || node === null) return true;
  const { names, bare, callees, keys } = found;
  const walk = (child: unknown) => collect(child as Node | undefined, found);
  if (LITERALS.has(node.type)) return true;
  switch (node.type) {
    case "Identifier":
      names.add(node["value"] as string);
      bare.add(node["value"] as string);
      return true;
    case "MemberExpression": {
      const object = node["object"] as Node;
      const property = node["property"] as Node;
      if (!node["computed"] && object.type === "Identifier") {
        keys.push([object["value"] as string, property["value"] as string]);
        found.keyUses.push([
          object["value"] as string,
          property["value"] as string,
        ]);
        names.add(object["value"] as string);
        return true;
      }
      const offset = node["computed"] && object.type === "Identifier"
        ? loopOffset(property)
        : null;
      if (offset !== null) {
        names.add(object["value"] as string);
        found.indexed.push([object["value"] as string, offset]);
        return walk(property);
      }
      return walk(object) && (!node["computed"] || walk(property));
    }
    case "CallExpression": {
      const callee = node["callee"] as Node;
      const named = calleeName(node);
      if (named !== undefined) {
        callees.add(named);
        names.add(named);
        bare.add(named);
      } else if (isMethodCall(callee)) {
        // Python's method of a string, dict or list: pure.
        if (!walk(callee["object"])) return false;
      } else if (
        callee.type !== "MemberExpression" ||
        (callee["object"] as Node).type === "Identifier" ||
        !walk(callee)
      ) {
        // A method of a value is pure; of a variable (a namespace's
        // attribute may hold a macro), not followed.
        return false;
      }
      return (node["args"] as Node[]).every(walk);
    }
    case "FilterExpression": {
      // Filters are pure; a filter's name is not a variable.
      const filter = node["filter"] as Node;
      return walk(node["operand"]) &&
        (filter.type !== "CallExpression" ||
          (filter["args"] as Node[]).every(walk));
    }
    case "KeywordArgumentExpression":
      return walk(node["value"]);
    case "SliceExpression":
      return walk(node["start"]) && walk(node["stop"]) && walk(node["step"]);
    case "UnaryExpression":
      return walk(node["argument"]);
    case "BinaryExpression": {
      const left = node["left"] as Node;
      const right = node["right"] as Node;
      if (COMPARISONS.has((node["operator"] as { value: string }).value)) {
        const offset = loopOffset(left);
        const other = offset === null ? left : right;
        const at = offset ?? loopOffset(right);
        const root = at === null ? null : comparedRoot(other, found);
        if (root !== null) {
          found.compared.push([root, at!]);
          return walk(other === left ? right : left);
        }
      }
      return walk(left) && walk(right);
    }
    case "Ternary":
      return walk(node["condition"]) && walk(node["trueExpr"]) &&
        walk(node["falseExpr"]);
    case "TestExpression":
      return walk(node["operand"]);
    case "ArrayLiteral":
    case "TupleLiteral":
      return (node["value"] as Node[]).every(walk);
    default:
      // Selects, object literals, spreads: not followed.
      return false;
  }
}

/** Values held by value: equal when their type and value are. */
const SCALARS: ReadonlySet<string> = new Set([
  "StringValue",
  "IntegerValue",
  "FloatValue",
  "BooleanValue",
  "NullValue",
  "UndefinedValue",
]);

/** A value that may be replayed into a later render: immutable data only. */
function storable(value: Value): boolean {
  if (SCALARS.has(value.type)) return true;
  switch (value.type) {
    case "ArrayValue":
    case "TupleValue":
      return (value.value as Value[]).every(storable);
    case "ObjectValue":
      if (isMutable(value)) return false;
      for (const item of (value.value as Map<string, Value>).values()) {
        if (!storable(item)) return false;
      }
      return true;
    default:
      return false;
  }
}

/**
 * Whether two values behave alike in a template: the same object, equal
 * scalars of one type, arrays and mappings of alike values in the same
 * order, or macros of one definition.
 */
export function alike(a: Value, b: Value, depth = 0): boolean {
  if (a === b) return true;
  if (a.type !== b.type || depth > 32) return false;
  if (SCALARS.has(a.type)) return Object.is(a.value, b.value);
  switch (a.type) {
    case "ArrayValue":
    case "TupleValue": {
      const x = a.value as Value[];
      const y = b.value as Value[];
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) {
        if (!alike(x[i]!, y[i]!, depth + 1)) return false;
      }
      return true;
    }
    case "ObjectValue": {
      if (isMutable(a) || isMutable(b)) return false;
      const x = a.value as Map<string, Value>;
      const y = b.value as Map<string, Value>;
      if (x.size !== y.size) return false;
      const ys = y.entries();
      for (const [key, value] of x) {
        const next = ys.next().value as [string, Value];
        if (next[0] !== key || !alike(value, next[1], depth + 1)) return false;
      }
      return true;
    }
    case "FunctionValue": {
      const node = macroNodes.get(a);
      return node !== undefined && node === macroNodes.get(b);
    }
    default:
      return false;
  }
}

/**
 * Whether `entry` holds for the item about to run in `scope`: no global it
 * read is shadowed, and every read gives an alike value again.
 */
export function holds(entry: Entry, loop: LoopScopes): boolean {
  const { globals, namespaces, reads } = entry;
  for (let i = 0; i < globals.length; i++) {
    if (loop.shadows(globals[i]!)) return false;
  }
  for (let i = 0; i < namespaces.length; i++) {
    if (!loop.isNamespace(namespaces[i]!)) return false;
  }
  for (let i = 0; i < reads.length; i++) {
    if (!readAgain(reads[i]!, loop)) return false;
  }
  const dead = entry.dead;
  for (let i = 0; i < dead.length; i++) {
    if (!loop.neverRaises(dead[i]!.node) && raises(dead[i]!, loop)) {
      return false;
    }
  }
  return true;
}

/** Whether evaluating a read raises now. */
export function raises(read: Read, loop: LoopScopes): boolean {
  try {
    loop.evaluate(read.node, loop.scope);
    return false;
  } catch {
    return true;
  }
}

/** Whether a kept read gives an alike value again (a read that throws does not). */
export function readAgain(read: Read, loop: LoopScopes): boolean {
  let value: Value | undefined;
  try {
    value = loop.evaluate(read.node, loop.scope);
  } catch {
    return false;
  }
  return value === read.value || alike(value, read.value);
}

/**
 * Makes `entry`'s namespace writes again, in order, from the scope around
 * the loop: all of a reuse that outlives the item.
 */
export function replayKeys(entry: Entry, outer: Scope): void {
  for (const write of entry.keyWrites) {
    const found = resolve(outer, write.name)!;
    (found.variables.get(write.name)!.value as Map<string, Value>).set(
      write.key,
      write.value,
    );
  }
}

/** Makes `entry`'s writes again, in order, from `scope`. */
export function replay(entry: Entry, scope: Scope): void {
  for (const write of entry.writes) {
    if (!("key" in write)) {
      scope.setVariable(write.name, write.value);
      continue;
    }
    const found = resolve(scope, write.name)!;
    (found.variables.get(write.name)!.value as Map<string, Value>).set(
      write.key,
      write.value,
    );
  }
}
