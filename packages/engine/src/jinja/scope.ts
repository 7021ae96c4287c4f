// The scopes a render runs in: the globals at the root, the context below
// them, and one scope per loop, macro call and block, each looking names up
// in itself first and then in its parent.
import { make, type Value } from "./values.ts";

/** A node of the tree `parse()` returns, read by its `type` (see ast.ts). */
export type Node = { type: string } & Record<string, unknown>;

/** The serial number of the next scope made in this process. */
let nextSerial = 0;

/** A scope: its own variables, and the scope it looks further names up in. */
export class Scope {
  /** The names this scope binds. */
  readonly variables: Map<string, Value> = new Map();
  /** The enclosing scope, or `undefined` at the root. */
  readonly parent: Scope | undefined;
  /** When it was made: a scope made later has a higher serial. */
  readonly serial: number = nextSerial++;

  /** @param parent The enclosing scope. */
  constructor(parent?: Scope) {
    this.parent = parent;
  }

  /** The serial the next scope made will have. */
  static nextSerial(): number {
    return nextSerial;
  }

  /** Binds `name` in this scope. */
  setVariable(name: string, value: Value): void {
    this.variables.set(name, value);
  }

  /** The value `name` has here: its nearest binding, or an Undefined. */
  lookup(name: string): Value {
    const own = this.variables.get(name);
    if (own !== undefined) return own;
    for (let s = this.parent; s !== undefined; s = s.parent) {
      const value = s.variables.get(name);
      if (value !== undefined) return value;
    }
    return make("UndefinedValue", undefined);
  }
}

/** The scope that defines `name`, seen from `scope`. */
export function resolve(scope: Scope, name: string): Scope | undefined {
  let found: Scope | undefined = scope;
  while (found !== undefined && !found.variables.has(name)) {
    found = found.parent;
  }
  return found;
}
