/**
 * Work that must go on after the response: on Workers inside `waitUntil` (at most 30 s after the
 * response), elsewhere as a detached promise (the process lives on).
 */
import type { Context } from "hono";
import { LockNotHeldError } from "../errors.js";
import { sleep } from "../platform.js";
import type { ReleasableHold } from "./acquirable-lock.js";

/** Pauses between background attempts: about 10 s in all, well inside `waitUntil`'s 30 s. */
export const BACKGROUND_DELAYS_MS: readonly number[] = [500, 2_000, 8_000];

/** `c.executionCtx.waitUntil`, or undefined where there is no ExecutionContext (Node, Bun). */
export function waitUntilOf(c: Context): ((promise: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (promise) => ctx.waitUntil(promise);
  } catch {
    // Hono's getter throws "This context has no ExecutionContext".
    return undefined;
  }
}

/** Runs `work` after the response; it must not reject (it is nobody's to catch). */
export function inBackground(c: Context, work: () => Promise<void>): void {
  const promise = work().catch(() => {});
  waitUntilOf(c)?.(promise);
}

/**
 * Releases `held`, retrying in the background when Redis failed: a handle whose release failed
 * stays held and its watchdog would keep the lock alive. After the last retry the handle's
 * disposer gives the hold up and the lease frees the lock. Resolves to the inline attempt's error.
 */
export async function releaseOrRetry(c: Context, held: ReleasableHold): Promise<unknown> {
  try {
    await held.release();
    return undefined;
  } catch (error) {
    // LockNotHeldError: the lease ran out; the handle is released already.
    if (!(error instanceof LockNotHeldError)) {
      inBackground(c, async () => {
        for (const delay of BACKGROUND_DELAYS_MS) {
          await sleep(delay);
          if (held.released) return;
          try {
            await held.release();
            return;
          } catch (retryError) {
            if (retryError instanceof LockNotHeldError) return;
          }
        }
        await (held as Partial<AsyncDisposable>)[Symbol.asyncDispose]?.();
      });
    }
    return error;
  }
}
