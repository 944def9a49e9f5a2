/**
 * The differential harness: runs command scenarios on a throwaway redis-server and on the embedded
 * engine and requires identical replies (type, value and error text). One describe block per
 * family file; skipped when redis-server is not installed (an error under CI=true).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Backend, Command } from "../../../../dev/backend.js";
import { createEmbeddedBackend } from "../../../../dev/engine/index.js";
import { redisServerUnderTest } from "../../../support/backend-kinds.js";
import { type Plain, plain, type RedisServer, startRedisServer } from "./helpers.js";

/**
 * A step: a command whose reply must match exactly, or one marked `unordered` whose array reply
 * is compared as a multiset (Redis returns hash-table order, which is unspecified).
 */
export type Step = Command | { readonly unordered: Command };

export type Scenarios = Readonly<Record<string, readonly Step[]>>;

function replyText(value: Plain): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
}

/** Sorts every nested array (by its JSON text), so hash-order replies compare as multisets. */
function sortedDeep(value: Plain): Plain {
  if (!Array.isArray(value)) return value;
  return (value as Plain[])
    .map(sortedDeep)
    .sort((a, b) => (replyText(a) < replyText(b) ? -1 : replyText(a) > replyText(b) ? 1 : 0));
}

function normalized(value: Plain, unordered: boolean): string {
  return replyText(unordered ? sortedDeep(value) : value);
}

/** What one step's replies were on both sides, normalized for comparison. */
export interface StepOutcome {
  readonly command: Command;
  readonly redis: string;
  readonly engine: string;
}

/**
 * Registers, in the enclosing describe block, a throwaway redis-server and an embedded engine that
 * are flushed (data, scripts, functions) before every test; returns a function running one step.
 */
export function differentialPair(): (step: Step) => Promise<StepOutcome> {
  let server: RedisServer;
  let engine: Backend;

  beforeAll(async () => {
    server = await startRedisServer();
    engine = await createEmbeddedBackend();
  }, 20_000);

  afterAll(async () => {
    await engine?.close();
    await server?.stop();
  });

  beforeEach(async () => {
    for (const command of [["flushall"], ["script", "flush"], ["function", "flush"]]) {
      await server.client.command(command);
      await engine.command(command);
    }
  });

  return async (step) => {
    const unordered = !Array.isArray(step);
    const command = unordered ? (step as { unordered: Command }).unordered : (step as Command);
    const redis = normalized(plain(await server.client.command(command)), unordered);
    return { command, redis, engine: normalized(plain(await engine.command(command)), unordered) };
  };
}

/** One test per scenario; a test fails listing every step whose replies differ. */
export function describeDifferential(title: string, scenarios: Scenarios): void {
  // guard: a differential test needs a real redis-server; redisServerUnderTest throws under CI=true.
  describe.runIf(redisServerUnderTest())(`differential: ${title}`, () => {
    const run = differentialPair();
    for (const [name, steps] of Object.entries(scenarios)) {
      it(name, async () => {
        const mismatches: string[] = [];
        for (const step of steps) {
          const { command, redis, engine } = await run(step);
          if (redis !== engine) {
            mismatches.push(
              `${JSON.stringify(command)}\n   redis:  ${redis}\n   engine: ${engine}`,
            );
          }
        }
        expect(mismatches.join("\n")).toBe("");
      });
    }
  });
}
