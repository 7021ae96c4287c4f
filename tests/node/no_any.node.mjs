// The "no any" check of the Node proof: `prove.ts` runs it with `node` in the
// Node project where the packed package is installed. It compiles
// `every_entry.ts` (one import of each entry in the package's `exports`) with
// the installed TypeScript, strict, and walks every declaration each entry
// exports: a type the package declares that is, or holds, `any` (a property,
// a parameter, a return type, a type argument, an index signature) is
// reported by its path, and the exit code is 1. Types from elsewhere (the
// standard library, @types/node) are not walked into: only their use.
import ts from "typescript";

const ENTRY_FILE = "every_entry.ts";
const PACKAGE_DIR = "/node_modules/@incontext/incontext/";
const MAX_DEPTH = 10;

const options = {
  strict: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ["lib.es2023.d.ts"],
  types: ["node"],
  noEmit: true,
  skipLibCheck: false,
};
const program = ts.createProgram({ rootNames: [ENTRY_FILE], options });
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) {
  console.error(ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => process.cwd(),
    getNewLine: () => "\n",
  }));
  process.exit(1);
}
const checker = program.getTypeChecker();
const source = program.getSourceFile(ENTRY_FILE);

/** Whether a declaration is in the package's own files. */
function inPackage(declaration) {
  return declaration.getSourceFile().fileName.includes(PACKAGE_DIR);
}

const found = [];
const seen = new Set();
let entries = 0;
let declarations = 0;

function walk(type, path, depth) {
  if (type.flags & ts.TypeFlags.Any) {
    found.push(path);
    return;
  }
  if (depth > MAX_DEPTH || seen.has(type)) return;
  seen.add(type);
  if (type.isUnionOrIntersection()) {
    for (const part of type.types) walk(part, path, depth + 1);
    return;
  }
  for (const argument of type.aliasTypeArguments ?? []) {
    walk(argument, `${path}<>`, depth + 1);
  }
  if (
    type.flags & ts.TypeFlags.Object &&
    type.objectFlags & ts.ObjectFlags.Reference
  ) {
    for (const argument of checker.getTypeArguments(type)) {
      walk(argument, `${path}<>`, depth + 1);
    }
  }
  const symbol = type.aliasSymbol ?? type.getSymbol();
  const ours = symbol?.declarations?.some(inPackage) ?? false;
  if (!ours) return;
  for (const property of checker.getPropertiesOfType(type)) {
    const declaration = property.valueDeclaration ?? property.declarations?.[0];
    if (declaration === undefined || !inPackage(declaration)) continue;
    walk(
      checker.getTypeOfSymbolAtLocation(property, declaration),
      `${path}.${property.name}`,
      depth + 1,
    );
  }
  for (const kind of [ts.SignatureKind.Call, ts.SignatureKind.Construct]) {
    for (const signature of checker.getSignaturesOfType(type, kind)) {
      for (const parameter of signature.getParameters()) {
        const declaration = parameter.valueDeclaration ??
          parameter.declarations?.[0];
        if (declaration === undefined) continue;
        walk(
          checker.getTypeOfSymbolAtLocation(parameter, declaration),
          `${path}(${parameter.name})`,
          depth + 1,
        );
      }
      walk(signature.getReturnType(), `${path}()`, depth + 1);
    }
  }
  for (const index of checker.getIndexInfosOfType(type)) {
    walk(index.type, `${path}[]`, depth + 1);
  }
}

for (const statement of source.statements) {
  if (!ts.isImportDeclaration(statement)) continue;
  const specifier = statement.moduleSpecifier.text;
  entries++;
  // A bare import (an entry that only runs): tsc has resolved it above.
  if (statement.importClause === undefined) continue;
  const module = checker.getSymbolAtLocation(statement.moduleSpecifier);
  if (module === undefined) {
    found.push(`${specifier} (no types)`);
    continue;
  }
  for (const exported of checker.getExportsOfModule(module)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias
      ? checker.getAliasedSymbol(exported)
      : exported;
    const path = `${specifier}#${exported.name}`;
    for (const declaration of symbol.declarations ?? []) {
      declarations++;
      if (symbol.flags & ts.SymbolFlags.Value) {
        walk(checker.getTypeOfSymbolAtLocation(symbol, declaration), path, 0);
      }
      if (
        symbol.flags &
        (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias |
          ts.SymbolFlags.Class | ts.SymbolFlags.Enum)
      ) {
        walk(checker.getDeclaredTypeOfSymbol(symbol), path, 0);
      }
    }
  }
}

if (found.length > 0) {
  console.error(
    `any in the package's types:\n  ${[...new Set(found)].join("\n  ")}`,
  );
  process.exit(1);
}
console.log(
  `no any in ${declarations} declarations exported by ${entries} entries (${seen.size} types walked)`,
);
