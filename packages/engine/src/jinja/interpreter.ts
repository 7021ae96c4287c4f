// @huggingface/jinja's interpreter with jinja2's default Undefined: reading
// an attribute or item of an undefined value raises instead of giving
// another undefined value.
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";
import { raised, UndefinedUseError, unsupported } from "./objects.ts";
import { pyBinary, pyIter, pyUnary } from "./operators.ts";
import { pyGetAttr, pyGetItem, pySlice } from "./lookup.ts";
import {
  type BlockMark,
  SCOPE_MARK,
  WITH_VALUES,
  type WithMark,
} from "./parse.ts";
import { fn, make, type Value } from "./values.ts";
import {
  type Entry,
  holds,
  isMutable,
  isNamespace,
  isStatement,
  type LoopScopes,
  markLoopObject,
  markMacro,
  memoOf,
  memoStats,
  Recorder,
  replay,
} from "./memo.ts";
import {
  type Node as MemoNode,
  resolve,
  type Scope as MemoScope,
} from "./scope.ts";

type Node = { type: string } & Record<string, unknown>;

// The overridden and reused methods are private in the package's typings.
interface Evaluator {
  evaluate(node: Node, environment: unknown): Value;
  evaluateIdentifier(node: Node, environment: unknown): Value;
  evaluateSet(node: Node, environment: unknown): Value;
  evaluateMacro(node: Node, environment: unknown): Value;
  evaluateBlock(body: Node[], environment: unknown): Value;
  evaluateBinaryExpression(node: Node, environment: unknown): Value;
  evaluateCallStatement(node: Node, environment: unknown): Value;
  evaluateUnaryExpression(node: Node, environment: unknown): Value;
  evaluateCallExpression(node: Node, environment: unknown): Value;
  evaluateArguments(
    args: Node[],
    environment: unknown,
  ): [Value[], Map<string, Value>];
}

const Base = Interpreter as unknown as new (env: unknown) => Evaluator;
const ObjectClass = make("ObjectValue", new Map()).constructor;
const ArrayClass = make("ArrayValue", []).constructor;
type ValueOf = new (value: unknown) => Value;
const IntegerClass = make("IntegerValue", 0).constructor as ValueOf;
const BooleanClass = make("BooleanValue", true).constructor as ValueOf;
const UndefinedClass = make("UndefinedValue", undefined).constructor as ValueOf;
const StringClass = make("StringValue", "").constructor as ValueOf;
type EnvironmentOf = new (parent?: unknown) => {
  setVariable(name: string, value: Value): Value;
};
const Scope = Environment as unknown as EnvironmentOf;

/** The package's own `evaluate`. */
const plainEvaluate = (Base.prototype as Evaluator).evaluate;

/** `evaluate` while a body is recorded: each expression in a frame. */
function recordingEvaluate(
  this: PyInterpreter,
  node: Node,
  environment: unknown,
): Value {
  if (!node || isStatement(node as MemoNode)) {
    return plainEvaluate.call(this, node, environment);
  }
  const rec = this.rec!;
  rec.push();
  const value = plainEvaluate.call(this, node, environment);
  rec.pop(node as MemoNode, environment as MemoScope, value);
  return value;
}

/** The classes `{% break %}` and `{% continue %}` throw (the package does not export them). */
function controlClass(type: "Break" | "Continue"): unknown {
  try {
    new Base(new Environment()).evaluate({ type }, new Environment());
  } catch (error) {
    return (error as object).constructor;
  }
  throw new Error(`@huggingface/jinja no longer throws on ${type}`);
}
/** The class of a call's keyword arguments (the package does not export it). */
const KeywordArgumentsClass = (() => {
  let found: unknown;
  const scope = new Environment();
  scope.setVariable(
    "f",
    make("FunctionValue", (args: Value[]) => {
      found = args.at(-1)!.constructor;
      return make("NullValue", null);
    }) as never,
  );
  (new Base(scope) as unknown as { run(program: unknown): Value }).run(
    parse(tokenize("{{ f(a=1) }}")),
  );
  return found as new (value: Map<string, Value>) => Value;
})();
const BreakClass = controlClass("Break");
const ContinueClass = controlClass("Continue");

/** Python's unpacking of `value` into `count` names. */
function unpack(value: Value, count: number): Value[] {
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
function targetNames(target: Node): string[] {
  return (target["value"] as Node[]).map((name) => {
    if (name.type !== "Identifier") {
      throw unsupported("unpacking into a nested target");
    }
    return name["value"] as string;
  });
}

/** Binds a loop variable, or unpacks a tuple of them, in a scope. */
function binder(
  loopvar: Node,
): (scope: InstanceType<EnvironmentOf>, item: Value) => void {
  if (loopvar.type === "Identifier") {
    const name = loopvar["value"] as string;
    return (scope, item) => scope.setVariable(name, item);
  }
  if (loopvar.type !== "TupleLiteral") {
    throw unsupported(`the loop target ${loopvar.type}`);
  }
  const names = targetNames(loopvar);
  return (scope, item) => {
    const values = unpack(item, names.length);
    names.forEach((name, j) => scope.setVariable(name, values[j]!));
  };
}

// The package's member lookup, but given the evaluated object first so that
// an undefined one raises (overriding `evaluate` instead costs every node).
class PyInterpreter extends Base {
  /** The item body being recorded for reuse, or null. */
  rec: Recorder | null = null;
  /** Whether `for` loops reuse item outputs between renders. */
  readonly memo: boolean;
  /** Where the program's top-level output goes part by part, or null. */
  parts: string[] | null = null;
  /** Where the next `for` loop's item outputs go (taken by that loop). */
  sink: string[] | null = null;
  /** The program's scope: where a `{% block %}` looks names up. */
  top: unknown = null;

  constructor(environment: unknown, memo: boolean) {
    super(environment);
    this.memo = memo;
    // An own property, swapped while a body is recorded (a stable shape:
    // assigning is cheap, deleting would not be).
    this.evaluate = plainEvaluate;
  }

  // The program's output as parts: each top-level statement's text, and
  // each item of a top-level loop on its own. A reused item's part is the
  // same string object as before, so comparing renders part by part never
  // joins (nor flattens) the whole text.
  evalProgram(program: Node, environment: unknown): Value {
    this.top = environment;
    const parts = this.parts;
    this.parts = null;
    if (parts === null) {
      return this.evaluateBlock(program["body"] as Node[], environment);
    }
    for (const statement of program["body"] as Node[]) {
      if (statement.type === "For") this.sink = parts;
      const value = this.evaluate(statement, environment);
      this.sink = null;
      if (value.type !== "NullValue" && value.type !== "UndefinedValue") {
        const text = value.toString();
        if (text !== "") parts.push(text);
      }
    }
    return make("StringValue", "");
  }

  /** A `{% with %}` or `{% block %}`, read as a marked call statement (see parse.ts). */
  override evaluateCallStatement(node: Node, environment: unknown): Value {
    const mark = node[SCOPE_MARK] as WithMark | BlockMark | undefined;
    if (mark === undefined) {
      return super.evaluateCallStatement(node, environment);
    }
    const body = node["body"] as Node[];
    if (mark.kind === "with") {
      // The values are read in the outer scope, then bound in the inner one.
      const values = (node[WITH_VALUES] as Node[]).map((value) =>
        this.evaluate(value, environment)
      );
      const scope = new Scope(environment);
      mark.names.forEach((name, i) => scope.setVariable(name, values[i]!));
      return this.evaluateBlock(body, scope);
    }
    if (mark.required) {
      throw raised(`Required block '${mark.name}' not found`);
    }
    // A block sees the template's own names only, unless it is scoped.
    const outer = mark.scoped ? environment : this.top ?? environment;
    return this.evaluateBlock(body, new Scope(outer));
  }

  override evaluateIdentifier(node: Node, environment: unknown): Value {
    if (this.rec === null) {
      return super.evaluateIdentifier(node, environment);
    }
    return this.rec.lookup(node as MemoNode, environment as MemoScope, true);
  }

  override evaluateMacro(node: Node, environment: unknown): Value {
    const result = super.evaluateMacro(node, environment);
    const scope = environment as MemoScope;
    const name = (node["name"] as Node)["value"] as string;
    markMacro(scope.variables.get(name)!, node as MemoNode);
    this.rec?.definedMacro(scope);
    return result;
  }

  override evaluateSet(node: Node, environment: unknown): Value {
    const rec = this.rec;
    const assignee = node["assignee"] as Node;
    const scope = environment as MemoScope;
    if (assignee.type === "MemberExpression") {
      const target = assignee["object"] as Node;
      const property = assignee["property"] as Node;
      if (
        target.type !== "Identifier" || property.type !== "Identifier" ||
        assignee["computed"]
      ) throw unsupported("assigning to this target");
      const value = node["value"]
        ? this.evaluate(node["value"] as Node, environment)
        : this.evaluateBlock(node["body"] as Node[], environment);
      const name = target["value"] as string;
      const object = resolve(scope, name)?.variables.get(name);
      if (!isNamespace(object)) {
        throw raised("cannot assign attribute on non-namespace object");
      }
      const key = property["value"] as string;
      (object.value as Map<string, Value>).set(key, value);
      rec?.wroteKey(scope, object, { name, key, value });
      return make("NullValue", null);
    }
    let names: string[];
    if (assignee.type === "TupleLiteral") {
      names = targetNames(assignee);
      const value = node["value"]
        ? this.evaluate(node["value"] as Node, environment)
        : this.evaluateBlock(node["body"] as Node[], environment);
      const values = unpack(value, names.length);
      names.forEach((name, j) => scope.setVariable(name, values[j]!));
    } else {
      if (assignee.type !== "Identifier") {
        throw unsupported("assigning to this target");
      }
      names = [assignee["value"] as string];
      super.evaluateSet(node, environment);
    }
    if (rec !== null) {
      for (const name of names) {
        rec.wroteName(scope, name, scope.variables.get(name)!);
      }
    }
    return make("NullValue", null);
  }

  override evaluateBinaryExpression(node: Node, environment: unknown): Value {
    const op = (node["operator"] as { value: string }).value;
    if (op === "and" || op === "or") {
      return super.evaluateBinaryExpression(node, environment);
    }
    const left = this.evaluate(node["left"] as Node, environment);
    const right = this.evaluate(node["right"] as Node, environment);
    return pyBinary(op, left, right);
  }

  override evaluateUnaryExpression(node: Node, environment: unknown): Value {
    const op = (node["operator"] as { value: string }).value;
    if (op === "not") return super.evaluateUnaryExpression(node, environment);
    return pyUnary(op, this.evaluate(node["argument"] as Node, environment));
  }

  override evaluateCallExpression(node: Node, environment: unknown): Value {
    const [args, kwargs] = this.evaluateArguments(
      node["args"] as Node[],
      environment,
    );
    if (kwargs.size > 0) args.push(new KeywordArgumentsClass(kwargs));
    const callee = this.evaluate(node["callee"] as Node, environment);
    if (callee.type === "FunctionValue") {
      return (callee.value as (args: Value[], scope: unknown) => Value)(
        args,
        environment,
      );
    }
    // jinja2 calls whatever it found: an Undefined (a missing attribute or a
    // method the sandbox hides) raises, and Python refuses anything else.
    if (callee.type === "UndefinedValue") {
      throw new UndefinedUseError("an undefined value is not callable");
    }
    throw raised(`'${callee.type}' object is not callable`);
  }

  evaluateMemberExpression(node: Node, environment: unknown): Value {
    const target = node["object"] as Node;
    const object = this.rec !== null && target.type === "Identifier"
      ? this.rec.lookup(target as MemoNode, environment as MemoScope, false)
      : this.evaluate(target, environment);
    if (this.rec !== null && isMutable(object)) {
      if (node["computed"]) this.rec.unkeep();
      else {
        this.rec.readKey(object, (node["property"] as Node)["value"] as string);
      }
    }
    if (object.type === "UndefinedValue") {
      throw new UndefinedUseError("an undefined value has no attributes");
    }
    const expr = node["property"] as Node;
    if (object.type === "IteratorValue") {
      // A Python generator takes no subscripts, and its attributes are methods.
      return make("UndefinedValue", undefined);
    }
    if (!node["computed"]) {
      const name = expr["value"] as string | number;
      // `x.0` is jinja2's item 0.
      return typeof name === "number"
        ? pyGetItem(object, make("IntegerValue", name))
        : pyGetAttr(object, name);
    }
    if (expr.type === "SliceExpression") {
      const at = (key: string) => {
        const bound = expr[key] as Node | undefined;
        return bound === undefined ? null : this.evaluate(bound, environment);
      };
      return pySlice(object, at("start"), at("stop"), at("step"));
    }
    return pyGetItem(object, this.evaluate(expr, environment));
  }
}

/**
 * The package's `for`, without its per-item costs: a scope per item only
 * for a loop with a test (`for x in xs if ...`), and one `loop` object per
 * loop whose entries change from item to item, as jinja2's single
 * LoopContext does (the package builds a new Map of nine values and a new
 * scope per item: most of a long conversation's render).
 */
function evaluateFor(
  this: PyInterpreter,
  node: Node,
  environment: unknown,
): Value {
  // A top-level loop of a render by parts sends its items there.
  const sink = this.sink;
  this.sink = null;
  const scope = new Scope(environment);
  const source = node["iterable"] as Node;
  const select = source.type === "SelectExpression";
  const iterable = this.evaluate(
    select ? source["lhs"] as Node : source,
    scope,
  );
  const loopvar = node["loopvar"] as Node;
  const bind = binder(loopvar);
  // A list as it is; a mapping's keys, a string's characters, as Python iterates them.
  let items = iterable instanceof ArrayClass
    ? iterable.value as Value[]
    : pyIter(iterable);
  if (select) {
    const test = source["test"] as Node;
    items = items.filter((item) => {
      const itemScope = new Scope(scope);
      bind(itemScope, item);
      return (this.evaluate(test, itemScope) as unknown as {
        __bool__(): Value;
      }).__bool__().value;
    });
  }
  const length = items.length;
  const loop = new LoopFields(items);
  const loopValue = make("ObjectValue", loop);
  markLoopObject(loopValue);
  const body = node["body"] as Node[];
  // Item outputs are reused only by a loop not itself inside a recorded body.
  const reuse = this.memo && this.rec === null && loopvar.type === "Identifier"
    ? new ItemReuse(this, node, scope, loopvar["value"] as string)
    : null;
  let result = "";
  // As in jinja2, `else` runs unless an item's body ran to its end.
  let completed = false;
  for (let i = 0; i < length; ++i) {
    loop.at = i;
    // jinja2 runs each item's body in a fresh scope: a `set` there is gone
    // at the next item, and never rebinds an outer name (only namespace
    // attributes carry over).
    if (i > 0) (scope as unknown as MemoScope).variables.clear();
    scope.setVariable("loop", loopValue);
    const item = items[i]!;
    bind(scope, item);
    try {
      const output = reuse?.run(item) ??
        this.evaluateBlock(body, scope).value as string;
      if (sink === null) result += output;
      else if (output !== "") sink.push(output);
    } catch (error) {
      const kind = (error as object | null)?.constructor;
      if (kind === ContinueClass) continue;
      if (kind === BreakClass) break;
      throw error;
    }
    completed = true;
  }
  if (!completed) {
    result += this.evaluateBlock(node["defaultBlock"] as Node[], scope).value;
  }
  if (sink !== null && result !== "") sink.push(result);
  return new StringClass(sink === null ? result : "");
}

/** Shared integer values: values never change once made. */
const integers: Value[] = [];
function integer(n: number): Value {
  for (let k = integers.length; k <= n; k++) integers.push(new IntegerClass(k));
  return integers[n]!;
}
const YES = new BooleanClass(true);
const NO = new BooleanClass(false);
const NONE = new UndefinedClass(undefined);
const LOOP_KEYS = [
  "index",
  "index0",
  "revindex",
  "revindex0",
  "first",
  "last",
  "length",
  "previtem",
  "nextitem",
] as const;
/** What jinja2's loop has besides its fields: read, never listed. */
const LOOP_EXTRAS: ReadonlySet<string> = new Set(["cycle", "depth", "depth0"]);
const LOOP_KEY_SET: ReadonlySet<string> = new Set([
  ...LOOP_KEYS,
  ...LOOP_EXTRAS,
]);

/**
 * The entries of a `for` loop's `loop` object, read from the current item's
 * position instead of written nine times an item: the same keys, in the
 * same order, with the same values as a Map filled for each item.
 */
class LoopFields extends Map<string, Value> {
  /** The current item's index. */
  at = 0;
  readonly #items: readonly Value[];

  constructor(items: readonly Value[]) {
    super();
    this.#items = items;
  }

  override get(key: string): Value | undefined {
    const i = this.at;
    const length = this.#items.length;
    switch (key) {
      case "index":
        return integer(i + 1);
      case "index0":
        return integer(i);
      case "revindex":
        return integer(length - i);
      case "revindex0":
        return integer(length - i - 1);
      case "first":
        return i === 0 ? YES : NO;
      case "last":
        return i === length - 1 ? YES : NO;
      case "length":
        return integer(length);
      case "previtem":
        return i > 0 ? this.#items[i - 1]! : NONE;
      case "nextitem":
        return i < length - 1 ? this.#items[i + 1]! : NONE;
      // A loop of a chat template is never recursive: depth 1.
      case "depth":
        return integer(1);
      case "depth0":
        return integer(0);
      case "cycle":
        return fn((args) => {
          if (args.length === 0) {
            throw raised("no items for cycling given");
          }
          return args[i % args.length]!;
        });
      default:
        return undefined;
    }
  }

  override has(key: string): boolean {
    return LOOP_KEY_SET.has(key);
  }

  override get size(): number {
    return LOOP_KEYS.length;
  }

  override *entries(): MapIterator<[string, Value]> {
    for (const key of LOOP_KEYS) yield [key, this.get(key)!];
  }

  override *keys(): MapIterator<string> {
    yield* LOOP_KEYS;
  }

  override *values(): MapIterator<Value> {
    for (const key of LOOP_KEYS) yield this.get(key)!;
  }

  override [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries();
  }

  override forEach(
    callback: (value: Value, key: string, map: Map<string, Value>) => void,
    thisArg?: unknown,
  ): void {
    for (const key of LOOP_KEYS) {
      callback.call(thisArg, this.get(key)!, key, this);
    }
  }
}

/**
 * One loop's reuse of item outputs from earlier renders (see
 * memo.ts): items that are mappings (messages, tools) are
 * recorded and reused; other items just run.
 */
class ItemReuse {
  readonly #interpreter: PyInterpreter;
  readonly #body: Node[];
  readonly #scope: MemoScope;
  readonly #chain: MemoScope[] = [];
  readonly #names: ReadonlySet<string>;
  readonly #memo: WeakMap<object, Entry>;
  /** Evaluates a kept check (one closure per loop, not per item). */
  readonly #evaluate: (node: MemoNode, scope: MemoScope) => Value;
  /** What a kept entry is checked against before reuse. */
  readonly #loop: LoopScopes;

  constructor(
    interpreter: PyInterpreter,
    node: Node,
    scope: unknown,
    name: string,
  ) {
    this.#interpreter = interpreter;
    this.#body = node["body"] as Node[];
    this.#scope = scope as MemoScope;
    for (let s: MemoScope | undefined = this.#scope; s; s = s.parent) {
      this.#chain.push(s);
    }
    this.#names = new Set([name]);
    this.#memo = memoOf(node as MemoNode);
    this.#evaluate = (check, at) => interpreter.evaluate(check as Node, at);
    this.#loop = {
      scope: this.#scope,
      chain: this.#chain,
      evaluate: this.#evaluate,
    };
  }

  /** The item's output, reused or recorded; `undefined` for an item that just runs. */
  run(item: Value): string | undefined {
    if (!(item instanceof ObjectClass) || isMutable(item)) return undefined;
    const interpreter = this.#interpreter;
    const entry = this.#memo.get(item);
    if (
      entry !== undefined &&
      holds(entry, this.#loop)
    ) {
      memoStats.hits++;
      replay(entry, this.#scope);
      return entry.output;
    }
    memoStats.misses++;
    const rec = new Recorder(this.#scope, this.#chain, this.#names);
    interpreter.rec = rec;
    interpreter.evaluate = recordingEvaluate;
    let output: string;
    try {
      output = interpreter.evaluateBlock(this.#body, this.#scope)
        .value as string;
    } catch (error) {
      this.#memo.delete(item);
      throw error;
    } finally {
      interpreter.rec = null;
      interpreter.evaluate = plainEvaluate;
    }
    const recorded = rec.entry(output);
    if (recorded === undefined) {
      memoStats.unkept++;
      this.#memo.delete(item);
    } else this.#memo.set(item, recorded);
    return output;
  }
}

(PyInterpreter.prototype as unknown as { evaluateFor: unknown }).evaluateFor =
  evaluateFor;

/**
 * `{% filter %}` renders its body in a scope of its own, as jinja2 does: a
 * `set` inside it is gone after `{% endfilter %}`.
 */
function evaluateFilterStatement(
  this: PyInterpreter,
  node: Node,
  environment: unknown,
): Value {
  const self = this as unknown as {
    applyFilter(operand: Value, filter: unknown, environment: unknown): Value;
  };
  const rendered = this.evaluateBlock(
    node["body"] as Node[],
    new Scope(environment),
  );
  return self.applyFilter(rendered, node["filter"], environment);
}

(PyInterpreter.prototype as unknown as {
  evaluateFilterStatement: unknown;
}).evaluateFilterStatement = evaluateFilterStatement;

/**
 * Runs a parsed program in an environment. With `memo`, `for` loops reuse
 * item outputs recorded in earlier renders of the same program when every
 * value the item read is alike again (only for items whose value objects
 * are kept between renders: see _template_memo.ts).
 */
export function runProgram(
  program: unknown,
  environment: unknown,
  memo = false,
): Value {
  return (new PyInterpreter(environment, memo) as unknown as {
    run(program: unknown): Value;
  }).run(program);
}

/**
 * {@linkcode runProgram}, the output as parts (joined, the same text): each
 * top-level statement's text and each item of a top-level `for` loop.
 */
export function runProgramParts(
  program: unknown,
  environment: unknown,
  memo = false,
): string[] {
  const interpreter = new PyInterpreter(environment, memo);
  const parts: string[] = [];
  interpreter.parts = parts;
  (interpreter as unknown as { run(program: unknown): Value }).run(program);
  return parts;
}

/** Evaluates one expression node in a scope, as a render would (tests compare the compiled checks with it). */
export function evaluateExpression(node: unknown, scope: unknown): Value {
  return new PyInterpreter(scope, false).evaluate(node as Node, scope);
}
