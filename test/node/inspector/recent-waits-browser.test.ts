// biome-ignore-all lint/performance/useDomNodeTextContent: Playwright's innerText() is the rendered text a person sees, which is what this test asserts
/**
 * The page's "Recent waits" in a real browser (Debian's Chromium, driven by playwright-core):
 * an inspector given a recorder shows the waits newest first, each row opening onto its steps
 * and the why of each sleep; one without (the dev server's page) shows no such section. CI
 * (CI=true) fails without Chromium; elsewhere the test skips and says why.
 */
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../../../dev/index.js";
import { serveFetch } from "../../../dev/inspect/node-fetch.js";
import { LockClient } from "../../../src/index.js";
import { inspectorHandler, recordRecentWaits } from "../../../src/inspector/index.js";

const CANDIDATES = [
  process.env.CHROMIUM_PATH,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
];
const executable = CANDIDATES.find((path): path is string => !!path && existsSync(path));
const inCi = process.env.CI === "true";
if (executable === undefined && !inCi) {
  console.warn(
    "recent-waits-browser.test.ts skipped: no Chromium found (apt-get install -y chromium, or set CHROMIUM_PATH); CI requires it",
  );
}

// guard: needs Chromium: skipped with the warning above outside CI; CI=true runs it (and fails
// without one).
describe.runIf(executable !== undefined || inCi)("recent waits on the inspector page", () => {
  let server: DevServer;
  let browser: Browser;
  let site: http.Server;
  let pageUrl: string;

  beforeAll(async () => {
    if (executable === undefined)
      throw new Error("CI=true and no Chromium: install it (.ci/run does)");
    server = await startDevServer({ backend: "auto" });
    const clientOf = () =>
      new LockClient({
        redis: new Redis({ url: server.url, token: server.token }),
        wait: { mode: "poll" },
      });
    const holder = clientOf();
    const waiter = clientOf();
    const recorder = recordRecentWaits(waiter);
    await holder.lock("orders:42").acquire({ leaseMs: 400 });
    await (await waiter.lock("orders:42").acquire({ leaseMs: 5_000, waitMs: 5_000 })).release();
    await holder.lock("stuck").acquire({ leaseMs: 60_000 });
    await waiter.lock("stuck").tryAcquire({ waitMs: 200 });
    const handle = inspectorHandler({
      client: waiter,
      access: () => "read",
      recentWaits: recorder,
    });
    site = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => void serveFetch(handle, request, response, Buffer.concat(chunks)));
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/_edgelock/`;
    browser = await chromium.launch({ executablePath: executable, args: ["--no-sandbox"] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await server?.close();
  });

  it("shows the waits newest first; a row opens onto its steps and why each slept", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(pageUrl);
    const section = page.locator("#recent-waits");
    await expect.poll(() => section.isVisible(), { timeout: 10_000 }).toBe(true);
    const rows = page.locator("#waits > tbody > tr");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await rows.nth(0).innerText()).toMatch(/ago\s+stuck\s+not acquired: busy\s+\d+ ms/);
    expect(await rows.nth(1).innerText()).toMatch(/ago\s+orders:42\s+acquired\s+\d+ ms\s+\d+/);

    const steps = rows.nth(1).locator("details");
    expect(await steps.locator("table").isVisible()).toBe(false);
    await steps.locator("summary").click();
    const stepRows = steps.locator("tbody tr");
    expect(await stepRows.nth(0).innerText()).toMatch(/^1\s+busy\s+\d+ ms\s+\S+.*\s+\d+ ms\s+\w+$/);
    expect(await stepRows.last().innerText()).toMatch(/acquired\s+\d+ ms\s+—\s+0 ms\s+—$/);
    // Still open after the next refresh redraws the table.
    const redrawn = page.waitForResponse((response) => response.url().endsWith("/api/waits"));
    await page.getByRole("button", { name: "Refresh now" }).click();
    await redrawn;
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await rows.nth(1).locator("details table").isVisible()).toBe(true);
    await page.close();
  });

  it("an inspector without a recorder (the dev server's page) shows no recent waits", async () => {
    if (server.inspectorUrl === undefined) throw new Error("the inspector is off");
    const page = await browser.newPage();
    const answered = page.waitForResponse((response) => response.url().endsWith("/api/waits"));
    await page.goto(server.inspectorUrl);
    expect(await (await answered).json()).toEqual({ recording: false });
    await expect
      .poll(() => page.locator("#status").innerText(), { timeout: 10_000 })
      .toMatch(/updated/);
    expect(await page.locator("#recent-waits").isVisible()).toBe(false);
    expect(await page.locator("#recent-waits").count()).toBe(1);
    await page.close();
  });
});
