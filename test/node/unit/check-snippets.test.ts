/** The docs-snippet extractor of scripts/check-snippets.ts: fences, skips and givens. */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  extractSnippets,
  mapsMissingSources,
  relativeLinks,
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
