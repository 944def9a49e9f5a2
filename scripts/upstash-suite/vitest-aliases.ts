/** The vitest API under the names bun:test gives it. */
import { vi } from "vitest";

export { afterAll, afterEach, beforeAll, beforeEach, describe, expect } from "vitest";
export const mock: typeof vi.fn = vi.fn;
export const spyOn: typeof vi.spyOn = vi.spyOn;
