// What a render can fail with: what jinja2 raises too (the server rejects
// the request), and what the renderer cannot follow (the count fails).

/** jinja2 raised an `UndefinedError`: the server would reject the request. */
export class UndefinedUseError extends Error {
  /** @param message What was undefined. */
  constructor(message: string) {
    super(message);
    this.name = "UndefinedUseError";
  }
}

/**
 * jinja2 raises the same Python exception here (a `TypeError` of a filter
 * on a value of the wrong type, say): the server would reject the request.
 */
export class PyRaisedError extends Error {
  /** @param message What Python refused. */
  constructor(message: string) {
    super(message);
    this.name = "PyRaisedError";
  }
}

/**
 * The renderer cannot do what jinja2 does here (a Python object it does not
 * model, a format it does not implement): the count fails, naming the
 * construct, rather than render differently or report a refusal.
 */
export class UnsupportedError extends Error {
  /** What is not supported, in the template's terms; never a value. */
  readonly construct: string;
  /** @param construct What is not supported. */
  constructor(construct: string) {
    super(`${construct} is not supported`);
    this.name = "UnsupportedError";
    this.construct = construct;
  }
}

/** Python raises here too: the server would reject the request. */
export function raised(message: string): PyRaisedError {
  return new PyRaisedError(message);
}

/** The renderer cannot follow jinja2 here. */
export function unsupported(construct: string): UnsupportedError {
  return new UnsupportedError(construct);
}
