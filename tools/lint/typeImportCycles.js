// A cycle that a type import closes. import-x's no-cycle follows only value imports (an `import type` is erased at
// compile time, so it cannot leave a module half-initialised), and it has no option to follow type imports. A
// cycle of types still ties the modules into one: neither can be read, moved or split without the other, which is
// what the layer rules are for. This rule reports, at each import that starts one, a cycle with at least one type
// import in it; cycles of values alone stay import-x's, so that no cycle is reported twice.
import { existsSync, readFileSync } from "node:fs"
import path from "node:path"
import ts from "typescript"

/** Each file's relative imports: the file it resolves to, and whether only types come through it. */
const importsCache = new Map()

const resolveRelative = (from, specifier) => {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return undefined
  const base = path.resolve(path.dirname(from), specifier)
  const candidates = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, path.join(base, "index.ts")]
  return candidates.find((candidate) => /\.[cm]?[jt]s$/.test(candidate) && existsSync(candidate))
}

const isTypeOnlyImport = (node) => {
  const clause = node.importClause
  if (clause === undefined) return false // `import "./x.ts"` runs the module.
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly)
}

const isTypeOnlyExport = (node) =>
  node.isTypeOnly || (node.exportClause !== undefined && ts.isNamedExports(node.exportClause) &&
    node.exportClause.elements.length > 0 && node.exportClause.elements.every((element) => element.isTypeOnly))

/** The file's static imports and re-exports, and its dynamic `import("…")`s, that resolve to a file of the tree. */
const importsOf = (file) => {
  const cached = importsCache.get(file)
  if (cached !== undefined) return cached
  const imports = []
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false)
  const add = (specifier, typeOnly) => {
    const target = resolveRelative(file, specifier)
    if (target !== undefined) imports.push({ target, typeOnly })
  }
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, isTypeOnlyImport(node))
    } else if (
      ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, isTypeOnlyExport(node))
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, false)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      // `typeof import("./x.ts")` in a type.
      add(node.argument.literal.text, true)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  importsCache.set(file, imports)
  return imports
}

/**
 * The path from `start` back to `home` that makes a cycle with a type import in it (`typeOnly`: the first edge,
 * home → start, is one), breadth first so that the shortest is named; undefined when there is none.
 */
const typedCycle = (home, start, typeOnly) => {
  const seen = new Set([`${start}|${typeOnly}`])
  const queue = [{ file: start, typed: typeOnly, route: [start] }]
  while (queue.length > 0) {
    const { file, route, typed } = queue.shift()
    for (const edge of importsOf(file)) {
      const nowTyped = typed || edge.typeOnly
      if (edge.target === home) {
        if (nowTyped) return route
        continue
      }
      const key = `${edge.target}|${nowTyped}`
      if (seen.has(key)) continue
      seen.add(key)
      queue.push({ file: edge.target, typed: nowTyped, route: [...route, edge.target] })
    }
  }
  return undefined
}

export const noTypeImportCycle = {
  meta: {
    type: "problem",
    docs: { description: "Forbid an import cycle that a type import closes (import-x/no-cycle reports the others)." },
    schema: [],
    messages: { cycle: "Import cycle through a type import: {{route}}." }
  },
  create(context) {
    const home = context.physicalFilename
    if (!path.isAbsolute(home)) return {}
    const check = (node, typeOnly) => {
      const specifier = node.source?.value
      if (typeof specifier !== "string") return
      const target = resolveRelative(home, specifier)
      if (target === undefined || target === home) return
      const route = typedCycle(home, target, typeOnly)
      if (route === undefined) return
      const name = (file) => path.relative(path.dirname(home), file) || path.basename(file)
      context.report({
        node,
        messageId: "cycle",
        data: { route: [path.basename(home), ...route.map(name), path.basename(home)].join(" → ") }
      })
    }
    return {
      ImportDeclaration: (node) =>
        check(
          node,
          node.importKind === "type" ||
            (node.specifiers.length > 0 && node.specifiers.every((each) => each.importKind === "type"))
        ),
      ExportNamedDeclaration: (node) =>
        node.source &&
        check(
          node,
          node.exportKind === "type" ||
            (node.specifiers.length > 0 && node.specifiers.every((each) => each.exportKind === "type"))
        ),
      ExportAllDeclaration: (node) => check(node, node.exportKind === "type")
    }
  }
}
