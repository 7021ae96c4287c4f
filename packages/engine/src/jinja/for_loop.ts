// `{% for %}`: Python's iteration and unpacking, jinja2's `loop` object and
// `else`, one scope per loop whose entries last for one item, and the reuse
// of item outputs between renders (memo.ts).
import type { Expr, For, Stmt } from "./ast.ts";
import { isMutable, isNamespace, LoopFields } from "./loop_fields.ts";
import {
  type Entry,
  holds,
  type LoopScopes,
  memoOf,
  memoStats,
  Recorder,
  replay,
} from "./memo.ts";
import { raised, truthy, unsupported } from "./objects.ts";
import { pyIter } from "./operators.ts";
import { LoopRun } from "./loop_runs.ts";
import { neverRaises } from "./never_raises.ts";
import { type Node, resolve, Scope } from "./scope.ts";
import { make, type Value } from "./values.ts";

/** What `{% break %}` throws, caught by its loop. */
export const BREAK: unique symbol = Symbol("break");
/** What `{% continue %}` throws, caught by its loop. */
export const CONTINUE: unique symbol = Symbol("continue");

/** What a loop needs of the interpreter running it. */
export interface LoopHost {
  /** The item body being recorded for reuse, or null. */
  rec: Recorder | null;
  /** Whether loops reuse item outputs between renders. */
  readonly memo: boolean;
  /** Where the next loop's item outputs go, one part each (taken by that loop). */
  sink: string[] | null;
  /** The output of statements. */
  block(body: readonly Stmt[], scope: Scope): string;
  /** An expression's value. */
  expr(node: Expr, scope: Scope): Value;
}

/** Python's unpacking of `value` into `count` names. */
export function unpack(value: Value, count: number): Value[] {
  if (value.type === "UndefinedValue") {
    throw raised(`not enough values to unpack (expected ${count}, got 0)`);
  }
  const values = pyIter(value);
  if (values.length !== count) {
    throw raised(
      values.length > count
        ? `too many values to unpack (expected ${count})`
        : `not enough values to unpack (expected ${count}, got ${values.length})`,
    );
  }
  return values;
}

/** The names of a tuple target (`a, b`). */
export function targetNames(items: readonly Expr[]): string[] {
  return items.map((name) => {
    if (name.type !== "Identifier") {
      throw unsupported("unpacking into a nested target");
    }
    return name.value;
  });
}

/** Binds a loop variable, or unpacks a tuple of them, in a scope. */
function binder(loopvar: For["loopvar"]): (scope: Scope, item: Value) => void {
  if (loopvar.type === "Identifier") {
    const name = loopvar.value;
    return (scope, item) => scope.setVariable(name, item);
  }
  const names = targetNames(loopvar.value);
  return (scope, item) => {
    const values = unpack(item, names.length);
    names.forEach((name, j) => scope.setVariable(name, values[j]!));
  };
}

/** The items a loop iterates: a list as it is; a mapping's keys, a string's characters, as Python iterates them. */
function itemsOf(iterable: Value): Value[] {
  // jinja2 iterates an Undefined as empty.
  if (iterable.type === "UndefinedValue") return [];
  return Array.isArray(iterable.value)
    ? iterable.value as Value[]
    : pyIter(iterable);
}

/**
 * Runs a loop, without per-item costs: a scope per item only for a loop
 * with a test (`for x in xs if ...`), and one `loop` object per loop whose
 * entries change from item to item.
 */
export function runFor(host: LoopHost, node: For, outer: Scope): string {
  // A top-level loop of a render by parts sends its items there.
  const sink = host.sink;
  host.sink = null;
  const scope = new Scope(outer);
  const source = node.iterable;
  const select = source.type === "SelectExpression";
  let items = itemsOf(host.expr(select ? source.lhs : source, scope));
  const bind = binder(node.loopvar);
  if (select) {
    items = items.filter((item) => {
      const itemScope = new Scope(scope);
      bind(itemScope, item);
      return truthy(host.expr(source.test, itemScope));
    });
  }
  const length = items.length;
  const loop = new LoopFields(items);
  const loopValue = make("ObjectValue", loop);
  const body = node.body;
  // Item outputs are reused only by a loop not itself inside a recorded body.
  const reuse = host.memo && host.rec === null &&
      node.loopvar.type === "Identifier"
    ? new ItemReuse(host, node, scope, node.loopvar.value, loopValue)
    : null;
  // The previous run's items this run shares, reused without checks.
  let run = reuse === null ? null : reuse.start(node as Node, items, loop);
  let result = "";
  // As in jinja2, `else` runs unless an item's body ran to its end.
  let completed = false;
  // Reused outputs go to the sink, or are joined into the result.
  const reusedOutputs = sink ?? [];
  for (let i = 0; i < length; ++i) {
    const reused = run?.reuseFrom(i, reusedOutputs) ?? 0;
    if (reused > 0) {
      if (sink === null) {
        result += reusedOutputs.join("");
        reusedOutputs.length = 0;
      }
      completed = true;
      i += reused - 1;
      continue;
    }
    loop.at = i;
    // jinja2 runs each item's body in a fresh scope: a `set` there is gone
    // at the next item, and never rebinds an outer name (only namespace
    // attributes carry over).
    if (i > 0) scope.variables.clear();
    scope.setVariable("loop", loopValue);
    const item = items[i]!;
    bind(scope, item);
    try {
      const output = reuse?.run(item) ?? host.block(body, scope);
      run?.done(i, reuse!.used, output);
      if (sink === null) result += output;
      else if (output !== "") sink.push(output);
    } catch (error) {
      if (error === CONTINUE) {
        run?.done(i, undefined, "");
        continue;
      }
      if (error === BREAK) {
        run = null;
        break;
      }
      throw error;
    }
    completed = true;
  }
  run?.finish();
  if (!completed) result += host.block(node.defaultBlock, scope);
  if (sink !== null && result !== "") sink.push(result);
  return sink === null ? result : "";
}

/**
 * One loop's reuse of item outputs from earlier renders (see memo.ts):
 * items that are mappings (messages, tools) are recorded and reused; other
 * items just run.
 */
class ItemReuse {
  readonly #host: LoopHost;
  readonly #body: readonly Stmt[];
  readonly #scope: Scope;
  readonly #chain: Scope[] = [];
  readonly #names: ReadonlySet<string>;
  readonly #memo: WeakMap<object, Entry>;
  /** What a kept entry is checked against before reuse. */
  readonly #loop: LoopScopes;
  readonly #name: string;
  readonly #probe: Scope;
  /** The entry the last item run reused or recorded, if any. */
  used: Entry | undefined;

  constructor(
    host: LoopHost,
    node: For,
    scope: Scope,
    name: string,
    loopValue: Value,
  ) {
    this.#host = host;
    this.#name = name;
    this.#body = node.body;
    this.#scope = scope;
    for (let s: Scope | undefined = scope; s; s = s.parent) this.#chain.push(s);
    this.#names = new Set([name]);
    this.#memo = memoOf(node as Node);
    // The scopes above the loop's own hold the same names for the whole
    // loop (a body's `set` writes the loop's scope; a namespace's
    // attributes change, not what the name holds): what is found there is
    // found once per loop, not once per item.
    const outer = this.#chain.slice(1, -1);
    const shadowed = new Map<string, boolean>();
    const namespaces = new Map<string, boolean>();
    // An item's scope as it starts, the loop and a mapping item only:
    // where a reuse without the item's own scope checks a read, and where
    // whether an expression may raise is judged.
    const probe = new Scope(scope.parent);
    probe.setVariable("loop", loopValue);
    probe.setVariable(name, make("ObjectValue", new Map()));
    this.#probe = probe;
    const total = new Map<Node, boolean>();
    this.#loop = {
      scope,
      // One closure per loop, not per item.
      evaluate: (check, at) => host.expr(check as Expr, at),
      shadows: (name) => {
        if (scope.variables.has(name)) return true;
        let found = shadowed.get(name);
        if (found === undefined) {
          found = outer.some((s) => s.variables.has(name));
          shadowed.set(name, found);
        }
        return found;
      },
      isNamespace: (name) => {
        const own = scope.variables.get(name);
        if (own !== undefined) return isNamespace(own);
        let found = namespaces.get(name);
        if (found === undefined) {
          found = isNamespace(resolve(scope, name)?.variables.get(name));
          namespaces.set(name, found);
        }
        return found;
      },
      neverRaises: (node) => {
        let found = total.get(node);
        if (found === undefined) {
          total.set(node, found = neverRaises(node, probe));
        }
        return found;
      },
    };
  }

  /** This run of the loop over `items`, aligned with its previous runs. */
  start(node: Node, items: readonly Value[], loop: LoopFields): LoopRun {
    return new LoopRun(node, items, this.#scope.parent!, this.#name, {
      ...this.#loop,
      scope: this.#probe,
    }, loop);
  }

  /** The item's output, reused or recorded; `undefined` for an item that just runs. */
  run(item: Value): string | undefined {
    this.used = undefined;
    if (item.type !== "ObjectValue" || isMutable(item)) return undefined;
    const entry = this.#memo.get(item);
    if (entry !== undefined && holds(entry, this.#loop)) {
      memoStats.hits++;
      replay(entry, this.#scope);
      this.used = entry;
      return entry.output;
    }
    memoStats.misses++;
    const host = this.#host;
    const rec = new Recorder(this.#scope, this.#chain, this.#names);
    host.rec = rec;
    let output: string;
    try {
      output = host.block(this.#body, this.#scope);
    } catch (error) {
      this.#memo.delete(item);
      throw error;
    } finally {
      host.rec = null;
    }
    const recorded = rec.entry(output);
    if (recorded === undefined) {
      memoStats.unkept++;
      this.#memo.delete(item);
    } else this.#memo.set(item, recorded);
    this.used = recorded;
    return output;
  }
}
