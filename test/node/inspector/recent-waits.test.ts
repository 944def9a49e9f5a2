/**
 * Recent waits (issue 45): `recordRecentWaits(client)` keeps a client's last finished waits with
 * their steps, `GET api/waits` answers them, `edgelock inspect waits` prints them. Real
 * @upstash/redis against the local server on each backend; nothing mocked.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { main } from "../../../dev/cli.js";
import type { DevServer } from "../../../dev/index.js";
import { serveFetch } from "../../../dev/inspect/node-fetch.js";
import { LockClient, LockInputError } from "../../../src/index.js";
import {
  type InspectedWaits,
  type InspectorAccess,
  inspector,
  inspectorHandler,
  type RecentWait,
  type RecentWaitsRecorder,
  recordRecentWaits,
} from "../../../src/inspector/index.js";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let counter = 0;
function fresh(): string {
  counter += 1;
  return `rw${Date.now().toString(36)}${counter}`;
}

/** Each attempt of a polling wait is a step: 1, 2, … up to its requests, none left out. */
function attemptsOf(wait: RecentWait): number[] {
  return wait.steps.map((step) => step.attempt);
}
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe.each(backendKindsUnderTest())("recent waits (%s)", (kind) => {
  const serverOf = withDevServer(kind);
  let server: DevServer;
  beforeAll(() => {
    server = serverOf();
  });

  // Polling: every step is one request, so a wait's steps number 1…requests.
  function clientsOf(prefix = fresh()) {
    const clientOf = () =>
      new LockClient({
        redis: new Redis({ url: server.url, token: server.token }),
        prefix,
        wait: { mode: "poll" },
      });
    return { holder: clientOf(), waiter: clientOf() };
  }

  it("two concurrent waits on one name of one client: each keeps its own steps", async () => {
    const { holder, waiter } = clientsOf();
    const recorder = recordRecentWaits(waiter, { maxSteps: 1_000 });
    // Both wait behind this hold together, each polling.
    await holder.lock("shared").acquire({ leaseMs: 800 });
    const takeAndRelease = async () => {
      const held = await waiter.lock("shared").acquire({ leaseMs: 5_000, waitMs: 10_000 });
      await sleep(100);
      await held.release();
      return held;
    };
    await Promise.all([takeAndRelease(), takeAndRelease()]);
    recorder.stop();

    const waits = recorder.waits();
    expect(waits).toHaveLength(2);
    for (const wait of waits) {
      expect(wait).toMatchObject({ name: "shared", outcome: "acquired", reason: null });
      expect(wait.requests).toBeGreaterThanOrEqual(2);
      expect(wait.droppedSteps).toBe(0);
      expect(attemptsOf(wait)).toEqual(oneTo(wait.requests));
      expect(wait.steps.at(-1)).toMatchObject({ answer: "acquired", delayMs: 0, why: null });
      expect(wait.steps.slice(0, -1).every((step) => step.answer === "busy")).toBe(true);
    }
    expect(new Set(waits.map((wait) => wait.id)).size).toBe(2);
    // Newest first.
    expect(waits[0]!.endedAt).toBeGreaterThanOrEqual(waits[1]!.endedAt);
  });

  it("keeps the last maxWaits waits, newest first, and the first and last steps of a long one", async () => {
    const { holder, waiter } = clientsOf();
    const recorder = recordRecentWaits(waiter, { maxWaits: 3, maxSteps: 4 });
    for (const name of ["w1", "w2", "w3"]) {
      await (await waiter.lock(name).acquire({ leaseMs: 5_000 })).release();
    }
    await holder.lock("long").acquire({ leaseMs: 10_000 });
    expect(await waiter.lock("long").tryAcquire({ leaseMs: 1_000, waitMs: 1_500 })).toBeNull();

    const waits = recorder.waits();
    expect(waits.map((wait) => wait.name)).toEqual(["long", "w3", "w2"]);
    expect(waits[1]).toMatchObject({ outcome: "acquired", requests: 1, droppedSteps: 0 });
    expect(attemptsOf(waits[1]!)).toEqual([1]);
    const long = waits[0]!;
    expect(long).toMatchObject({ outcome: "notAcquired", reason: "busy" });
    // The cap only shows on a wait with more steps than it keeps.
    expect(long.requests).toBeGreaterThan(4);
    expect(attemptsOf(long)).toEqual([1, 2, long.requests - 1, long.requests]);
    expect(long.droppedSteps).toBe(long.requests - 4);
    expect(long.steps.at(-1)).toMatchObject({ answer: "busy", why: "deadline" });
    recorder.stop();
  });

  it("stops recording when stopped or disposed; what it kept stays readable", async () => {
    const { waiter } = clientsOf();
    const stopped = recordRecentWaits(waiter);
    let disposed: RecentWaitsRecorder;
    {
      using recorder = recordRecentWaits(waiter);
      disposed = recorder;
      await (await waiter.lock("before").acquire({ leaseMs: 5_000 })).release();
    }
    stopped.stop();
    await (await waiter.lock("after").acquire({ leaseMs: 5_000 })).release();
    for (const recorder of [stopped, disposed]) {
      expect(recorder.waits().map((wait) => wait.name)).toEqual(["before"]);
    }
  });

  it("refuses options it does not know or cannot keep", () => {
    const { waiter } = clientsOf();
    expect(() => recordRecentWaits(waiter, { maxWaits: 0 })).toThrow(LockInputError);
    expect(() => recordRecentWaits(waiter, { maxSteps: 1 })).toThrow(LockInputError);
    expect(() => recordRecentWaits(waiter, { keep: 5 } as never)).toThrow(LockInputError);
  });

  /** A handler with a recorder of `waiter`, mounted at /x/_edgelock/. */
  function handlerOf(
    client: LockClient,
    recorder: RecentWaitsRecorder | undefined,
    access: InspectorAccess = "read",
  ) {
    return inspectorHandler({
      client,
      access: () => access,
      ...(recorder === undefined ? {} : { recentWaits: recorder }),
    });
  }
  async function waitsFrom(handle: (request: Request) => Promise<Response>) {
    const response = await handle(new Request("http://127.0.0.1/x/_edgelock/api/waits"));
    const text = await response.text();
    return { status: response.status, text, type: response.headers.get("content-type") };
  }

  it("GET api/waits: the recent waits as typed JSON, read access enough, no owner token", async () => {
    const { holder, waiter } = clientsOf();
    const recorder = recordRecentWaits(waiter);
    const held = await holder.lock("orders:42").acquire({ leaseMs: 300 });
    const mine = await waiter.lock("orders:42").acquire({ leaseMs: 5_000, waitMs: 5_000 });
    await mine.release();
    expect(await waiter.lock("orders:42").tryAcquire({ leaseMs: 5_000 })).not.toBeNull();

    const answer = await waitsFrom(handlerOf(waiter, recorder));
    expect(answer.status).toBe(200);
    expect(answer.type).toContain("application/json");
    const body = JSON.parse(answer.text) as InspectedWaits;
    expect(body).toMatchObject({ recording: true, maxWaits: 50, maxSteps: 20 });
    // guard: narrows the union; the line above asserts recording is true.
    if (!body.recording) throw new Error("not recording");
    expect(body.waits).toHaveLength(2);
    const waited = body.waits[1]!;
    expect(Object.keys(waited).sort()).toEqual(
      [
        "droppedSteps",
        "endedAt",
        "handOff",
        "id",
        "name",
        "outcome",
        "reason",
        "requests",
        "steps",
        "waitedMs",
      ].sort(),
    );
    expect(Object.keys(waited.steps[0]!).sort()).toEqual(
      ["answer", "attempt", "delayMs", "durationMs", "holderTtlMs", "why"].sort(),
    );
    expect(waited.steps[0]).toMatchObject({ attempt: 1, answer: "busy" });
    expect(waited.steps[0]!.delayMs).toBeGreaterThan(0);
    expect(body.takenAt).toBeGreaterThanOrEqual(waited.endedAt);
    for (const secret of [held.owner, mine.owner, server.token]) {
      expect(answer.text).not.toContain(secret);
    }

    expect((await waitsFrom(handlerOf(waiter, recorder, "none"))).status).toBe(403);
    const without = await waitsFrom(handlerOf(waiter, undefined));
    expect(without.status).toBe(200);
    expect(JSON.parse(without.text)).toEqual({ recording: false });
  });

  it("the Hono mount takes the recorder too", async () => {
    const { waiter } = clientsOf();
    const recorder = recordRecentWaits(waiter);
    await (await waiter.lock("hono").acquire({ leaseMs: 5_000 })).release();
    const app = new Hono();
    app.all(
      "/_edgelock/*",
      inspector({ client: waiter, auth: () => "read", recentWaits: recorder }),
    );
    const body = (await (await app.request("/_edgelock/api/waits")).json()) as InspectedWaits;
    expect(body).toMatchObject({ recording: true, waits: [{ name: "hono", outcome: "acquired" }] });
  });

  /** Serves `handle` on loopback like `edgelock inspect` does; returns its page URL. */
  async function serve(handle: (request: Request) => Promise<Response>) {
    const listener = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => void serveFetch(handle, request, response, Buffer.concat(chunks)));
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const { port } = listener.address() as AddressInfo;
    return {
      pageUrl: `http://127.0.0.1:${port}/ops/_edgelock/`,
      close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
    };
  }

  it("`edgelock inspect waits` prints them as a table, with --steps the why of each sleep, and --json", async () => {
    const { holder, waiter } = clientsOf();
    const recorder = recordRecentWaits(waiter);
    await holder.lock("cli").acquire({ leaseMs: 300 });
    await (await waiter.lock("cli").acquire({ leaseMs: 5_000, waitMs: 5_000 })).release();
    // Behind the inspector's own authentication: the variable's value is the header sent.
    const handle = inspectorHandler({
      client: waiter,
      access: (request) =>
        request.headers.get("authorization") === "Bearer ops" ? "read" : "none",
      recentWaits: recorder,
    });
    const site = await serve(handle);
    const lines: string[] = [];
    const errors: string[] = [];
    const io = (env: Record<string, string>) => ({
      out: (line: string) => lines.push(line),
      err: (line: string) => errors.push(line),
      env,
    });
    const authorized = io({ EDGELOCK_INSPECTOR_AUTHORIZATION: "Bearer ops" });
    try {
      const url = site.pageUrl.slice(0, -1); // without the final slash: still beside the page
      expect(await main(["inspect", "waits", "--url", url], authorized)).toBe(0);
      const table = lines.join("\n");
      expect(table).toMatch(/^ENDED\s+NAME\s+OUTCOME\s+WAITED\s+REQUESTS\s+STEPS\s+SLEPT \(WHY\)/);
      const [wait] = recorder.waits();
      const row = new RegExp(
        `ago\\s+cli\\s+acquired\\s+${wait!.waitedMs} ms\\s+${wait!.requests}\\s+${wait!.requests}\\s+\\w+ \\d+ ms`,
      );
      expect(table).toMatch(row);

      lines.length = 0;
      expect(await main(["inspect", "waits", "--url", site.pageUrl, "--steps"], authorized)).toBe(
        0,
      );
      const steps = lines.join("\n");
      expect(steps).toContain(`steps of cli (wait ${wait!.id}):`);
      const first = wait!.steps[0]!;
      expect(steps).toMatch(
        new RegExp(
          `^\\s+1\\s+busy\\s+\\d+ ms\\s+\\S+( ms)?\\s+${first.delayMs} ms\\s+${first.why}$`,
          "m",
        ),
      );
      expect(steps).toMatch(/acquired\s+\d+ ms\s+—\s+0 ms\s+—$/m);

      lines.length = 0;
      expect(await main(["inspect", "waits", "--url", site.pageUrl, "--json"], authorized)).toBe(0);
      const json = JSON.parse(lines.join("\n")) as InspectedWaits;
      expect(json).toMatchObject({ recording: true, waits: [{ name: "cli", id: wait!.id }] });

      // Without the header the inspector's own 403 is said, and the exit code is 1.
      expect(await main(["inspect", "waits", "--url", site.pageUrl], io({}))).toBe(1);
      expect(errors.join("\n")).toContain("403 forbidden");
    } finally {
      await site.close();
    }
  });

  it("`edgelock inspect waits` against an inspector without a recorder says how to give it one", async () => {
    const { waiter } = clientsOf();
    const site = await serve(handlerOf(waiter, undefined));
    const errors: string[] = [];
    const io = { out: () => undefined, err: (line: string) => errors.push(line), env: {} };
    try {
      expect(await main(["inspect", "waits", "--url", site.pageUrl], io)).toBe(1);
      expect(errors.join("\n")).toContain("records no waits");
      expect(await main(["inspect", "waits"], io)).toBe(2);
      expect(errors.join("\n")).toContain("no inspector URL");
    } finally {
      await site.close();
    }
  });
});
