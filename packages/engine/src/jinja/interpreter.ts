// The interpreter: evaluates the tree of parse.ts node by node, dispatching
// on each node's `type`, over the values of values.ts with Python's
// semantics (operators.ts, lookup.ts, filter_table.ts, tests.ts,
// methods.ts). jinja2's Undefined is kept: reading an attribute or item of
// one, calling one or computing with one raises.
import type {
  Block,
  CallExpression,
  Expr,
  For,
  MemberExpression,
  Program,
  Stmt,
  With,
} from "./ast.ts";
import { filterName } from "./ast.ts";
import { callValue, type Evaluate, evaluateArguments } from "./calls.ts";
import { filterNamed } from "./filter_table.ts";
import { BREAK, CONTINUE, runFor, targetNames, unpack } from "./for_loop.ts";
import { pyGetAttr, pyGetItem, pySlice } from "./lookup.ts";
import { isMutable, isNamespace } from "./loop_fields.ts";
import { callBlock, defineMacro } from "./macro.ts";
import type { Recorder } from "./memo.ts";
import { callMethod, METHODS } from "./methods.ts";
import {
  pyEq,
  raised,
  truthy,
  UndefinedUseError,
  unsupported,
} from "./objects.ts";
import { pyBinary, pyUnary } from "./operators.ts";
import { resolve, Scope } from "./scope.ts";
import { testNamed } from "./tests.ts";
import { make, pyStr, type Value } from "./values.ts";

type Node = { type: string } & Record<string, unknown>;

const TRUE = make("BooleanValue", true);
const FALSE = make("BooleanValue", false);

/** One render of a program: its scopes, and the loop memo's state. */
class Evaluator {
  /** The item body being recorded for reuse, or null. */
  rec: Recorder | null = null;
  /** Whether `for` loops reuse item outputs between renders. */
  readonly memo: boolean;
  /** Where the next `for` loop's item outputs go (taken by that loop). */
  sink: string[] | null = null;
  /** The program's scope: where a `{% block %}` looks names up. */
  top: Scope | null = null;

  /** {@linkcode expr}, as a function (one closure per render). */
  readonly #evaluate: Evaluate = (node, scope) => this.expr(node, scope);

  /** @param memo Whether `for` loops reuse item outputs between renders. */
  constructor(memo: boolean) {
    this.memo = memo;
  }

  /** The output of a program, or of its top-level statements (and each item of a top-level loop) as parts. */
  program(program: Program, scope: Scope, parts: string[] | null): string {
    this.top = scope;
    if (parts === null) return this.block(program.body, scope);
    for (const statement of program.body) {
      if (statement.type === "For") this.sink = parts;
      const text = this.statement(statement, scope);
      this.sink = null;
      if (text !== "") parts.push(text);
    }
    return "";
  }

  /** The output of a list of statements. */
  block(body: readonly Stmt[], scope: Scope): string {
    let out = "";
    for (const statement of body) out += this.statement(statement, scope);
    return out;
  }

  /** The output of one statement; an expression prints its value. */
  statement(node: Stmt, scope: Scope): string {
    switch (node.type) {
      case "StringLiteral":
        return node.value;
      case "If":
        return this.block(
          truthy(this.expr(node.test, scope)) ? node.body : node.alternate,
          scope,
        );
      case "For":
        return runFor(this, node as For, scope);
      case "Set":
        this.set(node, scope);
        return "";
      case "Macro":
        defineMacro(this, node, scope);
        return "";
      case "CallStatement":
        return pyStr(callBlock(this, node, scope));
      case "FilterStatement": {
        // The body renders in a scope of its own, as in jinja2: a `set`
        // inside it is gone after `{% endfilter %}`.
        const body = this.block(node.body, new Scope(scope));
        const args = node.filter.type === "CallExpression"
          ? this.arguments(node.filter.args, scope)
          : [];
        const name = filterName(node.filter);
        const value = filterNamed(name)([make("StringValue", body), ...args]);
        // jinja2 joins the block's result into the output as it is: only
        // text joins.
        if (value.type !== "StringValue") {
          throw raised("sequence item 0: expected str instance");
        }
        return value.value as string;
      }
      case "With":
        return this.with(node, scope);
      case "Block":
        return this.blockStatement(node, scope);
      case "Break":
        throw BREAK;
      case "Continue":
        throw CONTINUE;
      case "Comment":
        return "";
      default:
        return pyStr(this.expr(node, scope));
    }
  }

  /** An expression's value; while a loop item is recorded, in a frame of its own (memo.ts). */
  expr(node: Expr, scope: Scope): Value {
    const rec = this.rec;
    if (rec === null) return this.evaluate(node, scope);
    rec.push();
    const value = this.evaluate(node, scope);
    rec.pop(node as Node, scope, value);
    return value;
  }

  evaluate(node: Expr, scope: Scope): Value {
    switch (node.type) {
      case "Identifier":
        return this.rec === null
          ? scope.lookup(node.value)
          : this.rec.lookup(node as Node, scope, true);
      case "MemberExpression":
        return this.member(node, scope);
      case "CallExpression":
        return this.call(node, scope);
      case "StringLiteral":
        return make("StringValue", node.value);
      case "IntegerLiteral":
        return make("IntegerValue", node.value);
      case "FloatLiteral":
        return make("FloatValue", node.value);
      case "BinaryExpression":
        return this.binary(node.operator.value, node.left, node.right, scope);
      case "UnaryExpression": {
        const value = this.expr(node.argument, scope);
        if (node.operator.value === "not") return truthy(value) ? FALSE : TRUE;
        return pyUnary(node.operator.value, value);
      }
      case "FilterExpression": {
        const operand = this.expr(node.operand, scope);
        const filter = filterNamed(filterName(node.filter));
        if (node.filter.type === "Identifier") return filter([operand]);
        return filter([operand, ...this.arguments(node.filter.args, scope)]);
      }
      case "TestExpression": {
        const operand = this.expr(node.operand, scope);
        return testNamed(node.test.value)(operand, []) !== node.negate
          ? TRUE
          : FALSE;
      }
      case "Ternary":
        return this.expr(
          truthy(this.expr(node.condition, scope))
            ? node.trueExpr
            : node.falseExpr,
          scope,
        );
      case "SelectExpression":
        return truthy(this.expr(node.test, scope))
          ? this.expr(node.lhs, scope)
          : make("UndefinedValue", undefined);
      case "ArrayLiteral":
        return make("ArrayValue", node.value.map((x) => this.expr(x, scope)));
      case "TupleLiteral":
        return make("TupleValue", node.value.map((x) => this.expr(x, scope)));
      case "ObjectLiteral": {
        const entries = new Map<string, Value>();
        for (const [key, value] of node.value) {
          const k = this.expr(key, scope);
          if (k.type !== "StringValue") {
            throw unsupported("a dict key that is not a string");
          }
          entries.set(k.value as string, this.expr(value, scope));
        }
        return make("ObjectValue", entries);
      }
      default:
        throw unsupported(`the expression ${node.type} here`);
    }
  }

  /** Python's `left op right`; `and` and `or` evaluate `right` only when needed. */
  binary(op: string, left: Expr, right: Expr, scope: Scope): Value {
    const a = this.expr(left, scope);
    switch (op) {
      case "and":
        return truthy(a) ? this.expr(right, scope) : a;
      case "or":
        return truthy(a) ? a : this.expr(right, scope);
    }
    const b = this.expr(right, scope);
    switch (op) {
      case "==":
        return pyEq(a, b) ? TRUE : FALSE;
      case "!=":
        return pyEq(a, b) ? FALSE : TRUE;
      case "~":
        return make("StringValue", pyStr(a) + pyStr(b));
    }
    return pyBinary(op, a, b);
  }

  /** `object.name`, `object[key]` and slices, with jinja2's sandboxed lookup. */
  member(node: MemberExpression, scope: Scope): Value {
    const target = node.object;
    const rec = this.rec;
    const object = rec !== null && target.type === "Identifier"
      ? rec.lookup(target as Node, scope, false)
      : this.expr(target, scope);
    const property = node.property;
    if (rec !== null && isMutable(object)) {
      if (node.computed) rec.unkeep();
      else rec.readKey(object, (property as { value: string }).value);
    }
    if (object.type === "UndefinedValue") {
      throw new UndefinedUseError("an undefined value has no attributes");
    }
    if (object.type === "IteratorValue") {
      // A Python generator takes no subscripts, and its attributes are methods.
      return make("UndefinedValue", undefined);
    }
    if (!node.computed) {
      // `x.0` is jinja2's item 0.
      return property.type === "IntegerLiteral"
        ? pyGetItem(object, make("IntegerValue", property.value))
        : pyGetAttr(object, (property as { value: string }).value);
    }
    if (property.type === "SliceExpression") {
      const at = (bound: Expr | undefined) =>
        bound === undefined ? null : this.expr(bound, scope);
      return pySlice(
        object,
        at(property.start),
        at(property.stop),
        at(property.step),
      );
    }
    return pyGetItem(object, this.expr(property, scope));
  }

  /**
   * `callee(args)`: a method of the receiver called by name, or whatever
   * the callee gives; jinja2 calls whatever it found, so an Undefined (a
   * missing name or attribute, a method the sandbox hides) raises.
   */
  call(node: CallExpression, scope: Scope): Value {
    const callee = node.callee;
    if (
      callee.type === "MemberExpression" && !callee.computed &&
      callee.property.type === "Identifier" &&
      METHODS.has(callee.property.value)
    ) {
      const self = this.expr(callee.object, scope);
      return callMethod(
        callee.property.value,
        self,
        this.arguments(node.args, scope),
      );
    }
    const f = this.expr(callee, scope);
    return callValue(f, callee, this.arguments(node.args, scope));
  }

  /** A call's arguments, keyword arguments last. */
  arguments(nodes: readonly Expr[], scope: Scope): Value[] {
    return evaluateArguments(nodes, scope, this.#evaluate);
  }

  /** `{% set %}`: a name, names unpacked, or a namespace's attribute. */
  set(node: Extract<Stmt, { type: "Set" }>, scope: Scope): void {
    const rec = this.rec;
    const assignee = node.assignee;
    const mark = rec?.mark();
    const value = () =>
      node.value !== null
        ? this.expr(node.value, scope)
        : make("StringValue", this.block(node.body, scope));
    if (assignee.type === "MemberExpression") {
      const target = assignee.object;
      const property = assignee.property;
      if (
        target.type !== "Identifier" || property.type !== "Identifier" ||
        assignee.computed
      ) throw unsupported("assigning to this target");
      const result = value();
      const name = target.value;
      const object = resolve(scope, name)?.variables.get(name);
      if (!isNamespace(object)) {
        throw raised("cannot assign attribute on non-namespace object");
      }
      (object.value as Map<string, Value>).set(property.value, result);
      rec?.wroteKey(scope, object, {
        name,
        key: property.value,
        value: result,
      });
      return;
    }
    let names: string[];
    if (assignee.type === "TupleLiteral") {
      names = targetNames(assignee.value);
      const values = unpack(value(), names.length);
      names.forEach((name, j) => scope.setVariable(name, values[j]!));
    } else if (assignee.type === "Identifier") {
      names = [assignee.value];
      scope.setVariable(assignee.value, value());
    } else throw unsupported("assigning to this target");
    if (rec !== null) {
      for (const name of names) {
        // Unpacked names share their reads: each is kept at once.
        rec.wroteName(
          scope,
          name,
          scope.variables.get(name)!,
          names.length === 1 ? mark : undefined,
        );
      }
    }
  }

  /** `{% with %}`: the values read in the outer scope, then bound in an inner one. */
  with(node: With, scope: Scope): string {
    const values = node.values.map((value) => this.expr(value, scope));
    const inner = new Scope(scope);
    node.names.forEach((name, i) => inner.setVariable(name, values[i]!));
    return this.block(node.body, inner);
  }

  /** `{% block %}`, rendered in place: it sees the template's own names only, unless scoped. */
  blockStatement(node: Block, scope: Scope): string {
    if (node.required) {
      throw raised(`Required block '${node.name}' not found`);
    }
    const outer = node.scoped ? scope : this.top ?? scope;
    return this.block(node.body, new Scope(outer));
  }
}

/**
 * Runs a parsed program in a scope. With `memo`, `for` loops reuse item
 * outputs recorded in earlier renders of the same program when every value
 * the item read is alike again (only for items whose value objects are kept
 * between renders: see memo.ts).
 */
export function runProgram(
  program: Program,
  scope: Scope,
  memo = false,
): string {
  return new Evaluator(memo).program(program, scope, null);
}

/**
 * {@linkcode runProgram}, the output as parts (joined, the same text): each
 * top-level statement's text and each item of a top-level `for` loop.
 */
export function runProgramParts(
  program: Program,
  scope: Scope,
  memo = false,
): string[] {
  const parts: string[] = [];
  new Evaluator(memo).program(program, scope, parts);
  return parts;
}
