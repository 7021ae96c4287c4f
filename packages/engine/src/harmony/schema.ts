/**
 * Harmony's function tools as the developer message writes them: a
 * `namespace functions { ... }` of TypeScript-style types, each tool's JSON
 * schema converted as openai-harmony 0.0.8 converts it
 * (`HarmonyEncoding::json_schema_to_typescript` and
 * `template_tools_section` in `src/encoding.rs`).
 *
 * @module
 */
import { EngineError } from "../common/errors.ts";
import { isJsonObject } from "../common/request.ts";

/** A tool of a namespace: `ToolDescription`. */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  /** The JSON schema of the arguments; `null` writes `() => any`. */
  readonly parameters: unknown;
}

/**
 * The `# Tools` section of one namespace with tools, as
 * `template_tools_section` writes it (a namespace without a description).
 *
 * @param namespace The namespace's name (`functions`).
 * @param tools Its tools, in order.
 * @returns The section's text.
 */
export function toolsSection(
  namespace: string,
  tools: readonly ToolDescription[],
): string {
  const lines = [`## ${namespace}\n`];
  if (tools.length > 0) {
    lines.push(`namespace ${namespace} {\n`);
    for (const tool of tools) {
      for (const line of rustLines(tool.description)) lines.push(`// ${line}`);
      lines.push(
        tool.parameters === null || tool.parameters === undefined
          ? `type ${tool.name} = () => any;\n`
          : `type ${tool.name} = (_: ${
            schemaToTypescript(tool.parameters, "")
          }) => any;\n`,
      );
    }
    lines.push(`} // namespace ${namespace}`);
  }
  return ["# Tools", lines.join("\n")].join("\n\n");
}

/**
 * Rust's `str::lines`: split at `\n`, a `\r` before it dropped, no last
 * empty line after a final newline.
 */
export function rustLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line) => line.endsWith("\r") ? line.slice(0, -1) : line);
}

const get = (schema: unknown, key: string): unknown =>
  isJsonObject(schema) && Object.hasOwn(schema, key) ? schema[key] : undefined;

const asString = (value: unknown): string | undefined =>
  typeof value === "string" ? value : undefined;

/** `Some(...)` in serde_json: a key present, `null` included. */
const has = (schema: unknown, key: string): boolean =>
  isJsonObject(schema) && Object.hasOwn(schema, key);

function isEnum(schema: unknown): boolean {
  const values = get(schema, "enum");
  return Array.isArray(values) && values.length > 0;
}

function nullable(schema: unknown, type: string): string {
  return get(schema, "nullable") === true && !type.includes("null")
    ? `${type} | null`
    : type;
}

/** serde_json's `Display` of a value: compact JSON, non-ASCII as written. */
function display(value: unknown): string {
  return JSON.stringify(value);
}

/** A default as a trailing comment writes it: strings quoted unless an enum's. */
function defaultText(schema: unknown, value: unknown, quoteEnum: boolean) {
  if (typeof value !== "string") return `default: ${display(value)}`;
  if (!isEnum(schema)) return `default: "${value}"`;
  return quoteEnum ? `default: ${display(value)}` : `default: ${value}`;
}

/**
 * `json_schema_to_typescript`: a JSON schema as a TypeScript-style type.
 *
 * @param schema The schema.
 * @param indent The indent of its lines.
 * @returns The type's text.
 * @throws {EngineError} For an object whose property names JavaScript
 * reorders (integer-like names), which Harmony writes in the request's order.
 */
export function schemaToTypescript(schema: unknown, indent: string): string {
  const oneOf = get(schema, "oneOf");
  if (Array.isArray(oneOf)) {
    let out = "";
    for (const variant of oneOf) {
      out += `\n${indent} | `;
      out += nullable(variant, schemaToTypescript(variant, `${indent}   `));
      const trailing: string[] = [];
      const description = asString(get(variant, "description"));
      if (description !== undefined) trailing.push(description);
      if (has(variant, "default")) {
        trailing.push(defaultText(variant, get(variant, "default"), true));
      }
      if (trailing.length > 0) out += ` // ${trailing.join(" ")}`;
    }
    return out;
  }
  const type = get(schema, "type");
  if (Array.isArray(type)) {
    const names = type.filter((t) => typeof t === "string").map((t) =>
      t === "integer" ? "number" : t
    );
    if (names.length > 0) return names.join(" | ");
  }
  switch (typeof type === "string" ? type : undefined) {
    case "object":
      return objectType(schema, indent);
    case "string": {
      const values = get(schema, "enum");
      if (Array.isArray(values)) {
        const names = values.filter((v) => typeof v === "string").map((v) =>
          `"${v}"`
        );
        if (names.length > 0) return names.join(" | ");
      }
      return "string";
    }
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "array":
      return has(schema, "items")
        ? `${schemaToTypescript(get(schema, "items"), indent)}[]`
        : "Array<any>";
    default:
      return "any";
  }
}

function objectType(schema: unknown, indent: string): string {
  let out = "";
  const description = asString(get(schema, "description"));
  if (description !== undefined) out += `${indent}// ${description}\n`;
  out += "{\n";
  const properties = get(schema, "properties");
  if (isJsonObject(properties)) {
    const keys = Object.keys(properties);
    if (keys.length > 1 && keys.some((key) => /^(0|[1-9]\d*)$/.test(key))) {
      throw new EngineError(
        "Cannot count the request as a tool's schema has integer-like property names, whose order JavaScript does not keep",
      );
    }
    const required = new Set(
      (Array.isArray(get(schema, "required"))
        ? get(schema, "required") as unknown[]
        : []).filter((name) => typeof name === "string"),
    );
    for (const key of keys) {
      out += property(key, properties[key], required.has(key), indent);
    }
  }
  return `${out}${indent}}`;
}

function property(
  key: string,
  value: unknown,
  required: boolean,
  indent: string,
): string {
  let out = "";
  const title = asString(get(value, "title"));
  if (title !== undefined) out += `${indent}// ${title}\n${indent}//\n`;
  const description = asString(get(value, "description"));
  if (!has(value, "oneOf") && description !== undefined) {
    out += `${indent}// ${description}\n`;
  }
  const examples = get(value, "examples");
  if (Array.isArray(examples) && examples.length > 0) {
    out += `${indent}// Examples:\n`;
    for (const example of examples) {
      if (typeof example === "string") out += `${indent}// - "${example}"\n`;
    }
  }
  const optional = required ? "" : "?";
  const oneOf = get(value, "oneOf");
  if (Array.isArray(oneOf)) {
    const firstDescription = asString(get(oneOf[0], "description"));
    const skip = description !== undefined &&
      firstDescription === description;
    const above = !skip && description !== undefined;
    if (above) out += `${indent}// ${description}\n`;
    if (has(value, "default")) {
      out += `${indent}// ${
        defaultText(value, get(value, "default"), false)
      }\n`;
    }
    out += `${indent}${key}${optional}:\n`;
    oneOf.forEach((variant, index) => {
      out += `${indent} | `;
      out += nullable(variant, schemaToTypescript(variant, `${indent}   `));
      const trailing: string[] = [];
      const own = asString(get(variant, "description"));
      if (!(index === 0 && above) && own !== undefined && own !== description) {
        trailing.push(own);
      }
      if (has(variant, "default")) {
        trailing.push(defaultText(variant, get(variant, "default"), false));
      }
      if (trailing.length > 0) out += ` // ${trailing.join(" ")}`;
      out += "\n";
    });
    return `${out}${indent},\n`;
  }
  out += `${indent}${key}${optional}: `;
  out += nullable(value, schemaToTypescript(value, `${indent}    `));
  out += ",";
  if (!has(value, "oneOf") && has(value, "default")) {
    out += ` // ${defaultText(value, get(value, "default"), false)}`;
  }
  return `${out}\n`;
}
