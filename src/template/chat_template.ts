/**
 * Chat-template rendering that matches Python jinja2 as transformers sets it
 * up, built on @huggingface/jinja plus a layer that fixes its differences.
 *
 * @module
 */
import { Environment } from "@huggingface/jinja";
import { rewrite } from "./ast.ts";
import { parseTemplate } from "./parse.ts";
import { globalsFor } from "./globals.ts";
import { runProgram, runProgramParts } from "./interpreter.ts";
import { PyRaisedError, UndefinedUseError } from "./objects.ts";
import { toValue } from "./values.ts";

/** Converts a JavaScript value to a template value (a converted one stays as it is). */
export { toValue };

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
   * @throws {TemplateRaisedError} If the template calls `raise_exception`,
   * or (as {@linkcode TemplateUndefinedError}) uses an undefined value where
   * jinja2 raises.
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

// @huggingface/jinja's own errors for an undefined value used where jinja2
// raises UndefinedError (arithmetic or ordering on it).
function undefinedUse(error: unknown): boolean {
  return error instanceof Error && error.constructor === Error &&
    /^Cannot perform operation (?!in )\S+ on undefined values$/.test(
      error.message,
    );
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
  const program = rewrite(parseTemplate(source)) as ReturnType<
    typeof parseTemplate
  >;
  const now = options?.now ?? (() => new Date());
  const globals = globalsFor({
    now,
    raise: (message) => {
      throw new TemplateRaisedError(message);
    },
  });
  // Runs the program in a fresh scope holding the globals and the context.
  function run<T>(
    context: Record<string, unknown>,
    evaluate: (program: unknown, scope: unknown) => T,
  ): T {
    const root = new Environment();
    for (const [name, value] of globals) {
      root.setVariable(name as never, value as never);
    }
    const scope = new Environment(root);
    for (const [name, value] of Object.entries(context)) {
      scope.setVariable(name, toValue(value) as never);
    }
    try {
      return evaluate(program, scope);
    } catch (error) {
      if (error instanceof UndefinedUseError || undefinedUse(error)) {
        throw new TemplateUndefinedError((error as Error).message);
      }
      if (error instanceof PyRaisedError) {
        throw new TemplateRaisedError(error.message);
      }
      throw error;
    }
  }
  return {
    render: (context, renderOptions) =>
      run(
        context,
        (program, scope) =>
          runProgram(program, scope, renderOptions?.memo === true)
            .value as string,
      ),
    renderParts: (context, renderOptions) =>
      run(
        context,
        (program, scope) =>
          runProgramParts(program, scope, renderOptions?.memo === true),
      ),
  };
}
