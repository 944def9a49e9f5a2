/**
 * No test is skipped, or asserts nothing, without saying why. Lists under test/ every
 * - skip site: `describe|it|test` `.skip`, `.skipIf(…)`, `.runIf(…)` (a block that may never run), and
 * - conditional `expect`: an `expect(…)` in a branch of an `if`, of a `?:`, or right of `&&`/`||`
 *   (within the same function), which asserts nothing when the branch is not taken;
 * and fails unless each is justified at the site: a `// guard: <why>` comment on the lines right
 * above it (above the site's line, or above the `if` that holds the `expect`). The comments are
 * the allow-list: a site kept is a site explained where it is read.
 *
 * Usage: npx tsx scripts/check-test-guards.ts   (npm run check:guards; part of npm test)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

export interface GuardSite {
  /** 1-based line of the site. */
  readonly line: number;
  readonly kind: "skip" | "conditional expect";
  /** The source of the site, shortened. */
  readonly text: string;
  /** The `// guard:` comment's reason, or undefined when there is none. */
  readonly why: string | undefined;
}

const TEST_FUNCTIONS = new Set(["describe", "it", "test", "suite"]);
const SKIPPING = new Set(["skip", "skipIf", "runIf"]);
const GUARD = /^\s*\/\/\s*guard:\s*(\S.*)$/;

/** The identifier a chain like `describe.skip.each` starts from. */
function chainRoot(node: ts.Expression): ts.Identifier | undefined {
  let current: ts.Expression = node;
  while (ts.isPropertyAccessExpression(current) || ts.isCallExpression(current)) {
    current = current.expression;
  }
  return ts.isIdentifier(current) ? current : undefined;
}

/** `describe.skipIf`, `it.runIf`, `test.skip`…: the property access naming the skip. */
function isSkipSite(node: ts.Node): node is ts.PropertyAccessExpression {
  if (!ts.isPropertyAccessExpression(node) || !SKIPPING.has(node.name.text)) return false;
  const root = chainRoot(node.expression);
  return root !== undefined && TEST_FUNCTIONS.has(root.text);
}

function isExpectCall(node: ts.Node): node is ts.CallExpression {
  return (
    ts.isCallExpression(node) &&
    ts.isIdentifier(node.expression) &&
    node.expression.text === "expect"
  );
}

/** `expect(…)`, or `expect.unreachable(…)` / `expect.fail(…)`, which fail where they run. */
function isAssertion(node: ts.Node): boolean {
  if (isExpectCall(node)) return true;
  return (
    ts.isCallExpression(node) &&
    ts.isPropertyAccessExpression(node.expression) &&
    ts.isIdentifier(node.expression.expression) &&
    node.expression.expression.text === "expect" &&
    ["unreachable", "fail"].includes(node.expression.name.text)
  );
}

function containsExpect(node: ts.Node | undefined): boolean {
  if (node === undefined) return false;
  if (isAssertion(node)) return true;
  return (
    ts.forEachChild(node, (child) =>
      ts.isFunctionLike(child) ? undefined : containsExpect(child) || undefined,
    ) === true
  );
}

/** Ends by leaving its function or loop (`return`, `throw`, `continue`, `break`). */
function leaves(statement: ts.Statement): boolean {
  const last = ts.isBlock(statement) ? statement.statements.at(-1) : statement;
  return (
    last !== undefined &&
    (ts.isReturnStatement(last) ||
      ts.isThrowStatement(last) ||
      ts.isContinueStatement(last) ||
      ts.isBreakStatement(last))
  );
}

/**
 * Whether every way through `statement` asserts: each branch of an if/else-if/else chain holds an
 * `expect`, or a branch without `else` leaves and what follows it in its block asserts.
 */
function assertsEveryWay(statement: ts.IfStatement): boolean {
  let branch: ts.IfStatement = statement;
  for (;;) {
    if (!containsExpect(branch.thenStatement)) return false;
    const otherwise = branch.elseStatement;
    if (otherwise === undefined) break;
    if (!ts.isIfStatement(otherwise)) return containsExpect(otherwise);
    branch = otherwise;
  }
  if (!leaves(branch.thenStatement)) return false;
  const block = statement.parent;
  if (!ts.isBlock(block) && !ts.isSourceFile(block)) return false;
  const after = block.statements.slice(block.statements.indexOf(statement) + 1);
  return after.some((next) => containsExpect(next));
}

/**
 * The `if`/`?:`/`&&` whose branch holds `node`, within its function, when another way through it
 * asserts nothing; undefined if none.
 */
function conditionalHolder(node: ts.Node): ts.Node | undefined {
  let child = node;
  let parent = node.parent;
  while (parent !== undefined && !ts.isFunctionLike(parent) && !ts.isSourceFile(parent)) {
    if (ts.isIfStatement(parent) && child !== parent.expression) {
      let outermost: ts.IfStatement = parent;
      while (ts.isIfStatement(outermost.parent) && outermost.parent.elseStatement === outermost) {
        outermost = outermost.parent;
      }
      if (!assertsEveryWay(outermost)) return parent;
    }
    if (
      ts.isConditionalExpression(parent) &&
      child !== parent.condition &&
      !(containsExpect(parent.whenTrue) && containsExpect(parent.whenFalse))
    ) {
      return parent;
    }
    if (
      ts.isBinaryExpression(parent) &&
      child === parent.right &&
      [
        ts.SyntaxKind.AmpersandAmpersandToken,
        ts.SyntaxKind.BarBarToken,
        ts.SyntaxKind.QuestionQuestionToken,
      ].includes(parent.operatorToken.kind)
    ) {
      return parent;
    }
    child = parent;
    parent = parent.parent;
  }
  return undefined;
}

/** The reason of a `// guard:` comment in the comment lines right above 0-based `line`. */
function guardAbove(lines: readonly string[], line: number): string | undefined {
  for (let index = line - 1; index >= 0; index--) {
    const text = lines[index]!.trim();
    if (!text.startsWith("//")) return undefined;
    const reason = GUARD.exec(text)?.[1];
    if (reason !== undefined) return reason.trim();
  }
  return undefined;
}

/** Every skip site and conditional `expect` of one file, each with its justification if any. */
export function guardSites(fileName: string, source: string): GuardSite[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const lines = source.split("\n");
  const lineOf = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line;
  const shown = (node: ts.Node) => node.getText(file).replace(/\s+/g, " ").slice(0, 80);
  const sites: GuardSite[] = [];
  const visit = (node: ts.Node) => {
    if (isSkipSite(node)) {
      const line = lineOf(node);
      sites.push({
        line: line + 1,
        kind: "skip",
        text: shown(node.parent),
        why: guardAbove(lines, line),
      });
    } else if (isExpectCall(node)) {
      const holder = conditionalHolder(node);
      if (holder !== undefined) {
        const line = lineOf(node);
        sites.push({
          line: line + 1,
          kind: "conditional expect",
          text: shown(holder),
          why: guardAbove(lines, line) ?? guardAbove(lines, lineOf(holder)),
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return sites;
}

function testFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : testFiles(path);
    return /\.(ts|mts|tsx)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

function main(): number {
  const root = resolve(import.meta.dirname, "..");
  let unjustified = 0;
  let kept = 0;
  for (const path of testFiles(join(root, "test")).sort()) {
    const name = relative(root, path);
    for (const site of guardSites(name, readFileSync(path, "utf8"))) {
      if (site.why === undefined) {
        unjustified += 1;
        console.error(
          `${name}:${site.line}: ${site.kind} without a "// guard: <why>" comment: ${site.text}`,
        );
      } else {
        kept += 1;
        console.log(`${name}:${site.line}: ${site.kind} (${site.why})`);
      }
    }
  }
  console.log(`${kept} guarded sites, ${unjustified} without a reason`);
  return unjustified === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exitCode = main();
