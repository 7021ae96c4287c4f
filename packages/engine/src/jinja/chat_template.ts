/**
 * Chat-template rendering that matches Python jinja2 as transformers sets it
 * up: the template parsed by @huggingface/jinja's public `parse()`, and
 * rendered by this folder's own interpreter with Python's semantics.
 *
 * @module
 */
import { parseTemplate } from "./parse.ts";
import { globalsFor } from "./globals.ts";
import { runProgram, runProgramParts } from "./interpreter.ts";
import { Scope } from "./scope.ts";
import {
  PyRaisedError,
  UndefinedUseError,
  UnsupportedError,
} from "./objects.ts";
import { compileRefusal } from "./compile_check.ts";
import { make, toValue } from "./values.ts";

/** Converts a JavaScript value to a template value (a converted one stays as it is). */
export { toValue };

/**
 * A list of values already converted, as the template's list: no item is
 * looked at again.
 */
export function listValue(values: unknown[]): unknown {
  return make("ArrayValue", values);
}

export { PyFloat } from "./values.ts";
export { parseJsonLossless } from "./json.ts";
export {
  type ContentFormat,
  contentFormatOf,
  detectContentFormat,
} from "./content_format.ts";

/** Options of {@linkcode compileChatTemplate}. */
export interface RenderOptions {
  /**
   * The clock `strftime_now` reads (local time, C locale).
   *
   * @default {() => new Date()}
   */
  readonly now?: () => Date;
}

/** A compiled chat template. */
export interface ChatTemplate {
  /**
   * Renders the template.
   *
   * @param context Template variables. `Map`s keep their key order and
   * `PyFloat`s print as floats, as Python's values would.
   * @param options `memo`: `for` loops over mappings reuse each item's
   * output from an earlier render when everything it read is alike again;
   * only for contexts whose item values (already converted with
   * {@linkcode toValue}) are kept from render to render and never changed.
   * @returns The rendered text.
   * @throws {TemplateRaisedError} Where jinja2 raises: `raise_exception`,
   * a Python error (`"a" + None`, `len(None)`, an unknown filter, the
   * sandbox), a template jinja2 would not compile, or (as
   * {@linkcode TemplateUndefinedError}) an undefined value used.
   * @throws {TemplateUnsupportedError} Where the renderer cannot follow jinja2.
   */
  render(
    context: Record<string, unknown>,
    options?: { readonly memo?: boolean },
  ): string;
  /**
   * {@linkcode ChatTemplate.render}, the text in parts (joined, the same
   * text): each top-level statement's output, and each item of a top-level
   * `for` loop apart. With `memo`, a reused item's part is the very string
   * of the earlier render, so renders compare part by part cheaply.
   *
   * @param context Template variables, as for `render`.
   * @param options As for `render`.
   * @returns The parts of the rendered text.
   * @throws {TemplateRaisedError} As `render` does.
   * @throws {TemplateUnsupportedError} As `render` does.
   */
  renderParts(
    context: Record<string, unknown>,
    options?: { readonly memo?: boolean },
  ): string[];
}

/** The template called `raise_exception`: the server would reject this request. */
export class TemplateRaisedError extends Error {
  /**
   * @param message The template's message.
   * @param options Error options.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TemplateRaisedError";
  }
}

/**
 * The template used an undefined value where jinja2 raises `UndefinedError`
 * (its attribute, say): the server would reject this request.
 */
export class TemplateUndefinedError extends TemplateRaisedError {
  /**
   * @param message What was undefined.
   * @param options Error options.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TemplateUndefinedError";
  }
}

/**
 * The template uses something the renderer cannot render as jinja2 would:
 * the count fails, naming the construct, instead of counting a different
 * text or refusing a request the server would take.
 */
export class TemplateUnsupportedError extends Error {
  /** The construct, in template terms (syntax and value types, never values). */
  readonly construct: string;
  /**
   * @param construct The construct.
   * @param options Error options.
   */
  constructor(construct: string, options?: ErrorOptions) {
    super(`the template uses ${construct}, which is not supported`, options);
    this.name = "TemplateUnsupportedError";
    this.construct = construct;
  }
}

/**
 * Names what failed: the layer's own construct; any other error (a bug of
 * the renderer's) only by its type.
 */
function construct(error: unknown): string {
  if (error instanceof UnsupportedError) return error.construct;
  return `a construct the renderer fails on (${
    error instanceof Error ? error.name : typeof error
  })`;
}

/**
 * Compiles a chat template.
 *
 * @example Render a template
 * ```ts
 * import { compileChatTemplate } from "./chat_template.ts";
 * const template = compileChatTemplate("{{ x.strip('*') }}|{{ y }}");
 * console.assert(template.render({ x: "*hi*", y: true }) === "hi|True");
 * ```
 *
 * @param source Template text; CR LF and lone CR become LF, as in jinja2.
 * @param options Options.
 * @returns The compiled template.
 * @throws {SyntaxError} If the template does not parse.
 */
export function compileChatTemplate(
  source: string,
  options?: RenderOptions,
): ChatTemplate {
  const parsed = parseTemplate(source);
  // jinja2 would not compile it: transformers refuses every request.
  const refusal = compileRefusal(parsed);
  const program = parsed.program;
  const now = options?.now ?? (() => new Date());
  // The globals are the same for every render: one root scope holds them.
  const root = new Scope();
  const globals = globalsFor({
    now,
    raise: (message) => {
      throw new TemplateRaisedError(message);
    },
  });
  for (const [name, value] of globals) root.setVariable(name, value);
  // Runs the program in a fresh scope holding the context.
  function run<T>(
    context: Record<string, unknown>,
    evaluate: (scope: Scope) => T,
  ): T {
    if (refusal !== null) throw new TemplateRaisedError(refusal);
    const scope = new Scope(root);
    for (const [name, value] of Object.entries(context)) {
      scope.setVariable(name, toValue(value));
    }
    try {
      return evaluate(scope);
    } catch (error) {
      if (error instanceof UndefinedUseError) {
        throw new TemplateUndefinedError(error.message);
      }
      if (error instanceof PyRaisedError) {
        throw new TemplateRaisedError(error.message);
      }
      if (error instanceof TemplateRaisedError) throw error;
      // Endless recursion: Python's limit (1000 frames, a few per macro
      // call) comes before the JavaScript stack's.
      if (error instanceof RangeError && /call stack/i.test(error.message)) {
        throw new TemplateRaisedError("maximum recursion depth exceeded");
      }
      throw new TemplateUnsupportedError(construct(error), { cause: error });
    }
  }
  return {
    render: (context, renderOptions) =>
      run(
        context,
        (scope) => runProgram(program, scope, renderOptions?.memo === true),
      ),
    renderParts: (context, renderOptions) =>
      run(
        context,
        (scope) =>
          runProgramParts(program, scope, renderOptions?.memo === true),
      ),
  };
}
