// The tree a template parses into, as the interpreter reads it: the node
// shapes @huggingface/jinja's public `parse()` returns (its shipped
// `ast.d.ts`), told apart by `type`, and the two statements parse.ts reads
// into nodes of their own (`{% with %}` and `{% block %}`).

/** A name: a variable, a filter's, a test's, a parameter's. */
export type Identifier = { type: "Identifier"; value: string };

/** `name = value` in a call's arguments or a macro's parameters. */
export type KeywordArgument = {
  type: "KeywordArgumentExpression";
  key: Identifier;
  value: Expr;
};

/** A macro's or a call block's parameter. */
export type Parameter = Identifier | KeywordArgument;

/** A filter as written after `|`: a name, or a name with arguments. */
export type FilterCall = Identifier | CallExpression;

/** `callee(args)`. */
export type CallExpression = {
  type: "CallExpression";
  callee: Expr;
  args: Expr[];
};

/** `object.name`, `object[key]`, `object[start:stop:step]`. */
export type MemberExpression = {
  type: "MemberExpression";
  object: Expr;
  property: Expr;
  computed: boolean;
};

/** `start:stop:step` inside brackets. */
export type SliceExpression = {
  type: "SliceExpression";
  start: Expr | undefined;
  stop: Expr | undefined;
  step: Expr | undefined;
};

/** An expression. */
export type Expr =
  | Identifier
  | KeywordArgument
  | CallExpression
  | MemberExpression
  | SliceExpression
  | { type: "IntegerLiteral" | "FloatLiteral"; value: number }
  | { type: "StringLiteral"; value: string }
  | { type: "ArrayLiteral" | "TupleLiteral"; value: Expr[] }
  | { type: "ObjectLiteral"; value: Map<Expr, Expr> }
  | {
    type: "BinaryExpression";
    operator: { value: string };
    left: Expr;
    right: Expr;
  }
  | { type: "UnaryExpression"; operator: { value: string }; argument: Expr }
  | { type: "FilterExpression"; operand: Expr; filter: FilterCall }
  | { type: "TestExpression"; operand: Expr; negate: boolean; test: Identifier }
  | { type: "SelectExpression"; lhs: Expr; test: Expr }
  | { type: "Ternary"; condition: Expr; trueExpr: Expr; falseExpr: Expr }
  | { type: "SpreadExpression" | "KeywordSpreadExpression"; argument: Expr };

/** `{% for loopvar in iterable %}body{% else %}defaultBlock{% endfor %}`. */
export type For = {
  type: "For";
  loopvar: Identifier | { type: "TupleLiteral"; value: Expr[] };
  iterable: Expr;
  body: Stmt[];
  defaultBlock: Stmt[];
};

/** `{% with a = x, b = y %}body{% endwith %}` (read by parse.ts). */
export type With = {
  type: "With";
  names: string[];
  values: Expr[];
  body: Stmt[];
};

/** `{% block name [scoped] [required] %}body{% endblock %}` (read by parse.ts). */
export type Block = {
  type: "Block";
  name: string;
  scoped: boolean;
  required: boolean;
  body: Stmt[];
};

/** A statement; an expression among statements is printed. */
export type Stmt =
  | Expr
  | For
  | With
  | Block
  | { type: "If"; test: Expr; body: Stmt[]; alternate: Stmt[] }
  | { type: "Set"; assignee: Expr; value: Expr | null; body: Stmt[] }
  | { type: "Macro"; name: Identifier; args: Parameter[]; body: Stmt[] }
  | {
    type: "CallStatement";
    call: CallExpression;
    callerArgs: Parameter[] | null;
    body: Stmt[];
  }
  | { type: "FilterStatement"; filter: FilterCall; body: Stmt[] }
  | { type: "Break" | "Continue" }
  | { type: "Comment"; value: string };

/** A parsed template. */
export type Program = { type: "Program"; body: Stmt[] };

/** The name a filter applies. */
export function filterName(filter: FilterCall): string {
  if (filter.type === "Identifier") return filter.value;
  return filter.callee.type === "Identifier" ? filter.callee.value : "";
}
