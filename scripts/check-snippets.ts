/**
 * Docs cannot drift: every ```ts snippet in README.md and docs/*.md is type-checked against the
 * PACKED package under a standard Workers tsconfig (lib es2022, @cloudflare/workers-types,
 * skipLibCheck false, strict). The same scratch project also type-checks every entry point's
 * published .d.ts with skipLibCheck false, under the Workers types and under @types/node.
 *
 * A snippet that cannot stand alone is skipped by a visible comment right before its fence:
 *   <!-- snippet: skip (the reason) -->
 * A snippet is checked under the Workers tsconfig unless it imports a Node tool (edgelock/dev,
 * edgelock/testing) or is marked `node` (`<!-- snippet: node -->`, `<!-- snippet: node given`):
 * then under @types/node. One marked `worker` must be a whole Worker (`export default`) that
 * needs no Node global (`process`, `Buffer`): @cloudflare/workers-types declares them as `any`,
 * so only this check catches a quickstart that works in Node but not in a Worker.
 *
 * Every relative link in README.md and docs/ must name a file the package ships (README's must
 * be absolute: relative links break on the package page).
 *
 * Every check runs twice: with this repository's TypeScript and with the latest a new project
 * installs (LATEST_TYPESCRIPT, the native 7.x line), fetched through npm's cache or the registry.
 *
 * It also checks the package as the registry shows it: every source map in the tarball carries
 * its sources (or points at a file the tarball has), package.json names `repository` and
 * `homepage`, and README.md links absolutely (relative links break on the package page).
 *
 * Usage: npx tsx scripts/check-snippets.ts [--keep]   (--keep leaves the scratch project)
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createPackedProject, installBeside, REPO_ROOT, typeCheck } from "./packed-project.js";

export interface Snippet {
  /** e.g. `docs/fencing.md:42` (the line of the opening fence). */
  readonly origin: string;
  readonly code: string;
  /** Declarations the snippet assumes, from a `snippet: given` comment; checked, not shown. */
  readonly given: string;
  /** The reason given in a skip marker, when skipped. */
  readonly skipReason: string | undefined;
  /** Where the snippet runs, when its marker says (`node` or `worker`). */
  readonly runtime?: Runtime | undefined;
}

type Runtime = "node" | "worker";

const SKIP_MARKER = /^<!--\s*snippet:\s*skip\s*\((.+)\)\s*-->\s*$/;
const RUNTIME_MARKER = /^<!--\s*snippet:\s*(node|worker)\s*-->\s*$/;
const GIVEN_START = /^<!--\s*snippet:\s*(?:(node|worker)\s+)?given\s*$/;

interface Marker {
  skip?: string;
  given?: string;
  runtime?: Runtime;
}

/** The marker comment right before the fence at `fence` (blank lines between are allowed). */
function markerBefore(lines: readonly string[], fence: number): Marker {
  let last = fence - 1;
  while (last >= 0 && (lines[last] ?? "").trim() === "") last--;
  const skip = SKIP_MARKER.exec(lines[last] ?? "");
  if (skip) return { skip: skip[1] ?? "" };
  const runtime = RUNTIME_MARKER.exec(lines[last] ?? "");
  if (runtime) return { runtime: runtime[1] as Runtime };
  if ((lines[last] ?? "").trim() !== "-->") return {};
  let first = last - 1;
  while (first >= 0 && !GIVEN_START.test(lines[first] ?? "")) {
    if ((lines[first] ?? "").includes("-->")) return {};
    first--;
  }
  if (first < 0) return {};
  const marked = GIVEN_START.exec(lines[first] ?? "")?.[1] as Runtime | undefined;
  return {
    given: lines.slice(first + 1, last).join("\n"),
    ...(marked === undefined ? {} : { runtime: marked }),
  };
}

/**
 * Names a snippet imports and never uses (a reader copies them, and a linter then complains).
 * TypeScript reports these only with noUnusedLocals, which would also flag a snippet's
 * illustrative top-level constants.
 */
export function unusedImports(code: string): string[] {
  const unused: string[] = [];
  const imports = /^import\s+(?:type\s+)?([^;]*?)\s+from\s+["'][^"']+["'];?\s*$/gm;
  const rest = code.replace(imports, "");
  // A snippet of import lines alone shows where something comes from: nothing to use them.
  if (rest.replace(/\/\/.*$/gm, "").trim() === "") return [];
  for (const match of code.matchAll(imports)) {
    const clause = match[1] ?? "";
    const names = [
      ...(/^([\w$]+)/.exec(clause)?.slice(1) ?? []),
      ...(/\*\s+as\s+([\w$]+)/.exec(clause)?.slice(1) ?? []),
      ...(/\{([^}]*)\}/.exec(clause)?.[1] ?? "")
        .split(",")
        .map((part) => part.trim().replace(/^type\s+/, ""))
        .filter((part) => part !== "")
        .map((part) => part.split(/\s+as\s+/).at(-1) ?? part),
    ];
    for (const name of names) {
      if (!new RegExp(`(?<![\\w$])${name.replace(/\$/g, "\\$")}(?![\\w$])`).test(rest)) {
        unused.push(name);
      }
    }
  }
  return unused;
}

/** Why a snippet marked `worker` is not a Worker as written (empty when it is). */
export function workerProblems(code: string): string[] {
  const problems: string[] = [];
  if (!/^export default\b/m.test(code)) problems.push("no `export default` handler");
  for (const global of ["process", "Buffer", "require", "__dirname"]) {
    if (new RegExp(`(?<![\\w.])${global}\\b`).test(code)) {
      problems.push(`uses \`${global}\`, a Node global a Worker has not without nodejs_compat`);
    }
  }
  return problems;
}

/**
 * The ```ts blocks of one Markdown text, with their line and marker. Markers, right before the
 * fence:
 *   <!-- snippet: skip (the reason) -->
 *   <!-- snippet: given
 *   declare const client: LockClient;   (declarations the fragment assumes)
 *   -->
 */
export function extractSnippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split("\n");
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[index] ?? "")) continue;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && !/^```\s*$/.test(lines[index] ?? ""); index++) {
      body.push(lines[index] ?? "");
    }
    const marker = markerBefore(lines, start);
    snippets.push({
      origin: `${file}:${start + 1}`,
      code: body.join("\n"),
      given: marker.given ?? "",
      skipReason: marker.skip,
      ...(marker.runtime === undefined ? {} : { runtime: marker.runtime }),
    });
  }
  return snippets;
}

/** Source maps under `dir` that name a source neither embedded nor present: "map: source". */
export function mapsMissingSources(dir: string): string[] {
  const missing: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!entry.endsWith(".map")) continue;
    const path = join(dir, entry);
    const map = JSON.parse(readFileSync(path, "utf8")) as {
      sources: string[];
      sourceRoot?: string;
      sourcesContent?: (string | null)[];
    };
    map.sources.forEach((source, index) => {
      if (typeof map.sourcesContent?.[index] === "string") return;
      if (existsSync(resolve(dirname(path), map.sourceRoot ?? "", source))) return;
      missing.push(`${entry}: ${source}`);
    });
  }
  return missing;
}

/** Markdown links and images of `markdown` that are relative (they break on the package page). */
export function relativeLinks(markdown: string): string[] {
  const targets = [...markdown.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1] ?? "");
  const sources = [...markdown.matchAll(/<(?:img|a)\s[^>]*(?:src|href)="([^"]+)"/g)].map(
    (m) => m[1] ?? "",
  );
  return [...targets, ...sources].filter((target) => !/^(?:[a-z]+:|#)/i.test(target));
}

/**
 * Relative links of the shipped Markdown (`file`, e.g. `docs/push.md`) to paths the package does
 * not contain: they work in the repository but not in node_modules or on the package page.
 * `shipped(path)` says whether the package holds a path (relative to the package root).
 */
export function linksOutsidePackage(
  file: string,
  markdown: string,
  shipped: (path: string) => boolean,
): string[] {
  const base = dirname(file);
  return relativeLinks(markdown)
    .map((link) => link.replace(/[#?].*$/, ""))
    .filter((path) => path !== "")
    .filter((path) => {
      const target = join(base, decodeURIComponent(path));
      return target.startsWith("..") || !shipped(target);
    })
    .map((path) => `${file}: ${path}`);
}

/** Raster images anywhere in the installed package (paths relative to it). */
export function shippedPictures(dir: string, under = ""): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(dir, under), { withFileTypes: true })) {
    const path = under === "" ? entry.name : `${under}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") found.push(...shippedPictures(dir, path));
    } else if (/\.(png|jpe?g|gif|webp)$/i.test(entry.name)) found.push(path);
  }
  return found;
}

/** What a user meets on the package page and in node_modules, beyond the types. */
function packageHygiene(installed: string): string[] {
  const problems = mapsMissingSources(join(installed, "dist")).map(
    (missing) => `source map without its source: ${missing}`,
  );
  const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as Record<
    string,
    unknown
  >;
  for (const field of ["repository", "homepage"]) {
    if (manifest[field] === undefined) problems.push(`package.json has no "${field}"`);
  }
  // Pictures are for the repository's pages: a Worker install has no use for them (they link
  // absolutely to the repository instead).
  for (const picture of shippedPictures(installed)) {
    problems.push(`the tarball ships a picture: ${picture}`);
  }
  for (const link of relativeLinks(readFileSync(join(installed, "README.md"), "utf8"))) {
    problems.push(`README.md links relatively (broken on the package page): ${link}`);
  }
  for (const name of readdirSync(join(installed, "docs")).filter((n) => n.endsWith(".md"))) {
    const file = `docs/${name}`;
    const markdown = readFileSync(join(installed, file), "utf8");
    for (const broken of linksOutsidePackage(file, markdown, (path) =>
      existsSync(join(installed, path)),
    )) {
      problems.push(`links to a path the package does not ship: ${broken}`);
    }
  }
  return problems;
}

/** Entry points that are Node tools (the local server, the vitest helper), not Worker code. */
const NODE_ONLY_ENTRIES = new Set(["edgelock/dev", "edgelock/testing"]);

/** Every entry point in package.json `exports`, as import specifiers. */
function entryPoints(): string[] {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    exports: Record<string, unknown>;
  };
  return Object.keys(manifest.exports).map((key) => `edgelock${key.slice(1)}`);
}

function reExportAll(entries: readonly string[]): string {
  return `${entries.map((entry, index) => `export * as entry${index} from "${entry}";`).join("\n")}\n`;
}

const WORKERS_COMPILER_OPTIONS = {
  target: "ES2022",
  module: "ES2022",
  moduleResolution: "Bundler",
  lib: ["ES2022"],
  types: ["@cloudflare/workers-types"],
  strict: true,
  skipLibCheck: false,
  noEmit: true,
};

const NODE_COMPILER_OPTIONS = {
  ...WORKERS_COMPILER_OPTIONS,
  module: "NodeNext",
  moduleResolution: "NodeNext",
  types: ["node"],
};

/**
 * The TypeScript that `npm install -D typescript` gives a new project today (the native 7.x
 * line), checked beside the version this repository builds with.
 */
const LATEST_TYPESCRIPT = "7.0.2";

function typeScriptVersion(packageDir: string): string {
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as {
    version: string;
  };
  return manifest.version;
}

/** Installs a TypeScript beside the scratch project (npm's cache or the registry). */
function installTypeScript(dir: string, version: string): { name: string; tsc: string } {
  const installed = join(
    installBeside(dir, ".typescript", [`typescript@${version}`]),
    "typescript",
  );
  return { name: `TypeScript ${typeScriptVersion(installed)}`, tsc: join(installed, "bin/tsc") };
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

function main(): number {
  const docs = [
    "README.md",
    ...readdirSync(join(REPO_ROOT, "docs"))
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name}`),
  ];
  const snippets = docs.flatMap((file) =>
    extractSnippets(file, readFileSync(join(REPO_ROOT, file), "utf8")),
  );
  const checked = snippets.filter((snippet) => snippet.skipReason === undefined);
  let failures = 0;
  for (const snippet of checked) {
    const unused = unusedImports(snippet.code);
    if (unused.length > 0) {
      failures++;
      console.log(`FAIL ${snippet.origin} imports and never uses: ${unused.join(", ")}`);
    }
  }
  for (const snippet of checked.filter((snippet) => snippet.runtime === "worker")) {
    const problems = workerProblems(snippet.code);
    if (problems.length === 0) {
      console.log(`ok   ${snippet.origin} is a Worker as written`);
    } else {
      failures++;
      console.log(`FAIL ${snippet.origin} is not a Worker as written: ${problems.join("; ")}`);
    }
  }
  for (const skipped of snippets.filter((snippet) => snippet.skipReason !== undefined)) {
    console.log(`skip ${skipped.origin}: ${skipped.skipReason}`);
  }

  const project = createPackedProject();
  try {
    mkdirSync(join(project.dir, "snippets"));
    mkdirSync(join(project.dir, "snippets-node"));
    const fileToOrigin = new Map<string, string>();
    checked.forEach((snippet, index) => {
      // Snippets of the Node tools (edgelock/dev, edgelock/testing) and those marked `node` are
      // checked under @types/node; the rest (those marked `worker` too) under the Workers types.
      const folder =
        snippet.runtime === "node" ||
        [...NODE_ONLY_ENTRIES].some((entry) => snippet.code.includes(`"${entry}"`))
          ? "snippets-node"
          : "snippets";
      const name = `${folder}/${String(index).padStart(2, "0")}-${snippet.origin.replace(/[/:.]/g, "_")}.ts`;
      fileToOrigin.set(name, snippet.origin);
      // The given comes first, then the snippet; `export {}` keeps every file a module.
      writeFileSync(join(project.dir, name), `${snippet.given}\n${snippet.code}\nexport {};\n`);
    });
    const entries = entryPoints();
    const workerEntries = entries.filter((entry) => !NODE_ONLY_ENTRIES.has(entry));
    // Each Worker entry in a program of its own: a user may import only that one.
    workerEntries.forEach((entry, index) => {
      mkdirSync(join(project.dir, `entry-workers-${index}`));
      writeFileSync(join(project.dir, `entry-workers-${index}`, "all.ts"), reExportAll([entry]));
    });
    mkdirSync(join(project.dir, "entries-node"));
    writeFileSync(join(project.dir, "entries-node", "all.ts"), reExportAll(entries));

    const checks = [
      ["docs snippets (Workers tsconfig)", "snippets", WORKERS_COMPILER_OPTIONS],
      [
        "docs snippets marked node, and of edgelock/dev and edgelock/testing (@types/node)",
        "snippets-node",
        NODE_COMPILER_OPTIONS,
      ],
      ...workerEntries.map(
        (entry, index) =>
          [
            `published .d.ts of ${entry} alone (Workers tsconfig)`,
            `entry-workers-${index}`,
            WORKERS_COMPILER_OPTIONS,
          ] as const,
      ),
      [
        `published .d.ts of ${entries.join(", ")} (@types/node)`,
        "entries-node",
        NODE_COMPILER_OPTIONS,
      ],
    ] as const;
    const runs = checks.map(([what, folder, compilerOptions]): [string, string] => {
      const tsconfig = `tsconfig.${folder}.json`;
      writeJson(join(project.dir, tsconfig), { compilerOptions, include: [folder] });
      return [what, tsconfig];
    });
    const compilers: { name: string; tsc?: string }[] = [
      { name: `TypeScript ${typeScriptVersion(join(REPO_ROOT, "node_modules/typescript"))}` },
      installTypeScript(project.dir, LATEST_TYPESCRIPT),
    ];
    for (const [what, tsconfig] of runs) {
      const config = JSON.parse(readFileSync(join(project.dir, tsconfig), "utf8")) as {
        include: string[];
      };
      if (config.include.every((folder) => readdirSync(join(project.dir, folder)).length === 0)) {
        continue;
      }
      for (const compiler of compilers) {
        let output = typeCheck(project.dir, tsconfig, compiler.tsc);
        for (const [file, origin] of fileToOrigin)
          output = output.replaceAll(file, `${file} [${origin}]`);
        if (output === "") {
          console.log(`ok   ${what}, ${compiler.name}`);
        } else {
          failures++;
          console.log(`FAIL ${what}, ${compiler.name}\n${output}\n`);
        }
      }
    }
    const problems = packageHygiene(join(project.dir, "node_modules", "edgelock"));
    if (problems.length === 0) {
      console.log("ok   package hygiene (source maps, repository/homepage, README and docs links)");
    } else {
      failures++;
      console.log(`FAIL package hygiene\n${problems.join("\n")}\n`);
    }
  } finally {
    if (process.argv.includes("--keep")) console.log(`scratch project kept: ${project.dir}`);
    else project.remove();
  }
  return failures === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exitCode = main();
