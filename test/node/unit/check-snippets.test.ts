/** The docs-snippet extractor of scripts/check-snippets.ts: fences, skips and givens. */

import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  extractSnippets,
  linksOutsidePackage,
  mapsMissingSources,
  relativeLinks,
  shippedPictures,
  unusedImports,
  workerProblems,
} from "../../../scripts/check-snippets.js";

const markdown = [
  "# Title",
  "```ts",
  'const a = "plain";',
  "```",
  "<!-- snippet: skip (a fragment) -->",
  "",
  "```ts",
  "return 1;",
  "```",
  "<!-- snippet: given",
  "declare const client: unknown;",
  "-->",
  "```ts",
  "client;",
  "```",
  "```sh",
  "npm test",
  "```",
].join("\n");

describe("extractSnippets", () => {
  it("finds ts fences with their line, skip reason and given declarations", () => {
    expect(extractSnippets("README.md", markdown)).toEqual([
      { origin: "README.md:2", code: 'const a = "plain";', given: "", skipReason: undefined },
      { origin: "README.md:7", code: "return 1;", given: "", skipReason: "a fragment" },
      {
        origin: "README.md:13",
        code: "client;",
        given: "declare const client: unknown;",
        skipReason: undefined,
      },
    ]);
  });
});

describe("package hygiene", () => {
  it("finds source maps whose sources are neither embedded nor shipped", () => {
    const dir = mkdtempSync(join(tmpdir(), "maps-"));
    try {
      mkdirSync(join(dir, "dist"));
      const map = (sourcesContent?: string[]) =>
        JSON.stringify({ version: 3, sources: ["../src/a.ts"], mappings: "", sourcesContent });
      writeFileSync(join(dir, "dist", "embedded.js.map"), map(["export {}"]));
      writeFileSync(join(dir, "dist", "bare.js.map"), map());
      expect(mapsMissingSources(dir)).toEqual(["dist/bare.js.map: ../src/a.ts"]);
      mkdirSync(join(dir, "src"));
      writeFileSync(join(dir, "src", "a.ts"), "export {}");
      expect(mapsMissingSources(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("finds relative links and images, not absolute ones or anchors", () => {
    const readme = [
      "[guide](docs/guide.md) [site](https://example.com) [up](#install)",
      '![chart](docs/chart.svg) <img src="logo.png"> [mail](mailto:a@b.c)',
    ].join("\n");
    expect(relativeLinks(readme)).toEqual(["docs/guide.md", "docs/chart.svg", "logo.png"]);
  });
});

describe("shipped docs links", () => {
  const shipped = new Set(["docs/dev-server.md", "docs/bench-contention.svg", "README.md"]);
  const has = (path: string) => shipped.has(path);

  it("flags relative links to paths the package does not ship, and nothing else", () => {
    const markdown = [
      "[server](dev-server.md#auth) ![chart](bench-contention.svg) [readme](../README.md)",
      "[example](../examples/webhook-worker/) [worker](../bench/worker/app.ts)",
      "[abs](https://github.com/edgelock/edgelock/blob/main/bench/results/latest.json) [top](#top)",
    ].join("\n");
    expect(linksOutsidePackage("docs/benchmarks.md", markdown, has)).toEqual([
      "docs/benchmarks.md: ../examples/webhook-worker/",
      "docs/benchmarks.md: ../bench/worker/app.ts",
    ]);
  });

  it("finds none in this repository's docs/ (every target is shipped: docs/ is in `files`)", () => {
    const root = join(import.meta.dirname, "../../..");
    const files = (
      JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { files: string[] }
    ).files;
    const inPackage = (path: string) =>
      files.some((entry) => path === entry || path.startsWith(`${entry}/`)) &&
      existsSync(join(root, path));
    for (const name of readdirSync(join(root, "docs")).filter((n) => n.endsWith(".md"))) {
      const file = `docs/${name}`;
      expect(linksOutsidePackage(file, readFileSync(join(root, file), "utf8"), inPackage)).toEqual(
        [],
      );
    }
  });
});

describe("worker snippets", () => {
  it("reads node and worker markers", () => {
    const marked = [
      "<!-- snippet: worker given",
      "declare const x: number;",
      "-->",
      "```ts",
      "export default {};",
      "```",
      "<!-- snippet: node -->",
      "```ts",
      "process.exit(0);",
      "```",
    ].join("\n");
    expect(extractSnippets("README.md", marked).map((snippet) => snippet.runtime)).toEqual([
      "worker",
      "node",
    ]);
  });

  it("rejects a Worker quickstart that reads process.env or has no handler", () => {
    expect(workerProblems("export default { fetch() { return new Response(env.URL); } };")).toEqual(
      [],
    );
    expect(workerProblems("const url = process.env.UPSTASH_REDIS_REST_URL!;")).toEqual([
      "no `export default` handler",
      "uses `process`, a Node global a Worker has not without nodejs_compat",
    ]);
  });

  it("holds for the README's Worker quickstart", () => {
    const root = join(import.meta.dirname, "../../..");
    const workers = extractSnippets(
      "README.md",
      readFileSync(join(root, "README.md"), "utf8"),
    ).filter((snippet) => snippet.runtime === "worker");
    expect(workers.length).toBeGreaterThan(0);
    for (const snippet of workers) expect(workerProblems(snippet.code)).toEqual([]);
  });
});

describe("unused imports", () => {
  it("finds named, default and namespace imports that the code never uses", () => {
    const code = [
      'import { middlewareFor, stripeEventId } from "edgelock/hono";',
      'import { type LockClient, withLock as lockRoute } from "edgelock";',
      'import Default from "x";',
      'import * as all from "y";',
      "middlewareFor(app); let c: LockClient; all.x();",
    ].join("\n");
    expect(unusedImports(code)).toEqual(["stripeEventId", "lockRoute", "Default"]);
  });

  it("finds none in README.md and docs/", () => {
    const root = join(import.meta.dirname, "../../..");
    const files = [
      "README.md",
      ...readdirSync(join(root, "docs"))
        .filter((name) => name.endsWith(".md"))
        .map((name) => `docs/${name}`),
    ];
    const found = files.flatMap((file) =>
      extractSnippets(file, readFileSync(join(root, file), "utf8"))
        .filter((snippet) => snippet.skipReason === undefined)
        .flatMap((snippet) =>
          unusedImports(snippet.code).map((name) => `${snippet.origin} ${name}`),
        ),
    );
    expect(found).toEqual([]);
  });
});

describe("package hygiene: pictures", () => {
  it("finds raster images anywhere in a package, none in node_modules", () => {
    const dir = mkdtempSync(join(tmpdir(), "pictures-"));
    try {
      mkdirSync(join(dir, "docs"), { recursive: true });
      mkdirSync(join(dir, "node_modules/x"), { recursive: true });
      writeFileSync(join(dir, "docs/page.png"), "");
      writeFileSync(join(dir, "docs/chart.svg"), "");
      writeFileSync(join(dir, "docs/page.md"), "");
      writeFileSync(join(dir, "node_modules/x/logo.jpg"), "");
      expect(shippedPictures(dir)).toEqual(["docs/page.png"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the package ships none (package.json files leaves docs/*.png out)", () => {
    const root = join(import.meta.dirname, "../../..");
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      files: string[];
    };
    expect(manifest.files).toContain("!docs/*.png");
    const linked = readFileSync(join(root, "docs/inspector.md"), "utf8");
    expect(linked).not.toMatch(/\]\(inspector\.png\)/);
  });
});
