/**
 * Replica mode (`replica: { lagMs }`, `edgelock dev --replica-lag-ms`): writes and EVAL on the
 * primary, reads and EVAL_RO on a replica `lagMs` behind, unless the request's
 * `upstash-sync-token` names a newer primary state (then the read waits for the replica), as
 * Upstash documents for global databases (redis/howto/readyourwrites.mdx).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDevArgs, UsageError } from "../../../dev/cli.js";
import { type DevServer, startDevServer } from "../../../dev/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { type RawResponse, rawRequest, uniqueKey } from "../../support/rest.js";

const LAG_MS = 1_000;

function tokenOf(response: RawResponse): string {
  const token = response.headers.get("upstash-sync-token");
  expect(token).toMatch(/^\d+$/);
  return token as string;
}

describe.each(backendKindsUnderTest())("replica mode on %s", (kind) => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer({ backend: kind, replica: { lagMs: LAG_MS } });
  });
  afterAll(() => server.close());

  const send = (body: unknown, syncToken?: string) =>
    rawRequest(server, "/", {
      method: "POST",
      body,
      ...(syncToken === undefined ? {} : { headers: { "upstash-sync-token": syncToken } }),
    });

  it("reads without a token come from the lagging replica; a write's token makes a read wait for it", async () => {
    const key = uniqueKey("replica");
    const written = await send(["SET", key, "v"]);
    expect(written.json()).toEqual({ result: "OK" });
    const token = tokenOf(written);

    const stale = await send(["GET", key]);
    expect(stale.json()).toEqual({ result: null });
    expect(Number(tokenOf(stale))).toBeLessThan(Number(token));

    const fresh = await send(["GET", key], token);
    expect(fresh.json()).toEqual({ result: "v" });
    expect(Number(tokenOf(fresh))).toBeGreaterThanOrEqual(Number(token));
  });

  it("EVAL runs on the primary, EVAL_RO and a pipeline of reads on the replica, a pipeline with a write on the primary", async () => {
    const key = uniqueKey("replica");
    await send(["SET", key, "v"]);
    expect((await send(["EVAL", "return redis.call('GET', KEYS[1])", "1", key])).json()).toEqual({
      result: "v",
    });
    expect((await send(["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", key])).json()).toEqual(
      { result: null },
    );
    const reads = await rawRequest(server, "/pipeline", {
      method: "POST",
      body: [
        ["GET", key],
        ["EXISTS", key],
      ],
    });
    expect(reads.json()).toEqual([{ result: null }, { result: 0 }]);
    const mixed = await rawRequest(server, "/pipeline", {
      method: "POST",
      body: [
        ["INCR", `${key}:n`],
        ["GET", key],
      ],
    });
    expect(mixed.json()).toEqual([{ result: 1 }, { result: "v" }]);
  });

  it("its inspector page says that its view may lag", async () => {
    const response = await fetch(`${server.inspectorUrl}api/snapshot`);
    expect(((await response.json()) as { lagNote: unknown }).lagNote).toMatch(
      /nearest region of a global database/,
    );
  });

  it("the replica catches up after the lag without a token", async () => {
    const key = uniqueKey("replica");
    await send(["SET", key, "v"]);
    await new Promise((resolve) => setTimeout(resolve, LAG_MS * 2));
    expect((await send(["GET", key])).json()).toEqual({ result: "v" });
  });

  it("a token that names no state of this server waits at most for the primary's present state", async () => {
    const key = uniqueKey("replica");
    await send(["SET", key, "v"]);
    const started = Date.now();
    const answered = await send(["GET", key], "999999999999");
    expect(answered.json()).toEqual({ result: "v" });
    expect(Date.now() - started).toBeLessThan(LAG_MS * 5);
    expect((await send(["GET", key], "not-a-token")).status).toBe(200);
  });
});

describe("replica mode's options", () => {
  it("refuses a Redis URL and a negative lag", async () => {
    await expect(
      startDevServer({ backend: { url: "redis://127.0.0.1:1" }, replica: { lagMs: 10 } }),
    ).rejects.toThrow(/replica mode starts its own primary and replica/);
    await expect(startDevServer({ backend: "embedded", replica: { lagMs: -1 } })).rejects.toThrow(
      /lagMs must be a number of ms ≥ 0/,
    );
  });

  it("edgelock dev --replica-lag-ms N", () => {
    expect(parseDevArgs(["--replica-lag-ms", "250"]).replicaLagMs).toBe(250);
    expect(parseDevArgs([]).replicaLagMs).toBeUndefined();
    expect(() => parseDevArgs(["--replica-lag-ms", "-5"])).toThrow(UsageError);
    expect(() =>
      parseDevArgs(["--replica-lag-ms", "5", "--redis-url", "redis://127.0.0.1:6379"]),
    ).toThrow(/drop --redis-url/);
  });
});
