/** The docs-snippet extractor of scripts/check-snippets.ts: fences, skips and givens. */
import { describe, expect, it } from "vitest";
import { extractSnippets } from "../../../scripts/check-snippets.js";

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
