/** The `edgelock` command line. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HELP, main, parseDevArgs, UsageError } from "../../../dev/cli.js";
import type { DevServer } from "../../../dev/index.js";
import { findRedisServerBinary } from "../../../dev/redis-server.js";
import { upstash } from "../../support/rest.js";

function captureIo() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) },
  };
}

describe("edgelock CLI arguments", () => {
  it("has documented defaults", () => {
    expect(parseDevArgs([])).toEqual({
      port: 8079,
      host: "127.0.0.1",
      token: undefined,
      backend: "auto",
      faults: {},
    });
  });

  it("parses every option", () => {
    expect(
      parseDevArgs([
        "--port=0",
        "--host",
        "0.0.0.0",
        "--token",
        "t",
        "--latency",
        "20",
        "--jitter",
        "5",
        "--drop",
        "0.1",
        "--fail",
        "0.2",
        "--seed",
        "42",
        "--redis-url",
        "redis://h:1",
      ]),
    ).toEqual({
      port: 0,
      host: "0.0.0.0",
      token: "t",
      backend: { url: "redis://h:1" },
      faults: {
        latencyMs: 20,
        jitterMs: 5,
        dropAfterExecute: 0.1,
        failBeforeExecute: 0.2,
        seed: 42,
      },
    });
    expect(parseDevArgs(["--backend", "embedded"]).backend).toBe("embedded");
  });

  it.each([
    [["--drop", "2"]],
    [["--port", "x"]],
    [["--port", "1.5"]],
    [["--backend", "postgres"]],
    [["--backend", "embedded", "--redis-url", "redis://h"]],
    [["--seed", "-1"]],
    [["--token", ""]],
  ])("rejects %j", (args) => {
    expect(() => parseDevArgs(args)).toThrow(UsageError);
  });

  it("prints help, and exits non-zero on misuse", async () => {
    const help = captureIo();
    expect(await main(["--help"], help.io)).toBe(0);
    expect(help.out.join("\n")).toBe(HELP);
    expect(await main([], captureIo().io)).toBe(1);
    const unknown = captureIo();
    expect(await main(["serve"], unknown.io)).toBe(2);
    expect(unknown.err[0]).toMatch(/unknown command "serve"/);
    const badOption = captureIo();
    expect(await main(["dev", "--nope"], badOption.io)).toBe(2);
  });
});

describe.skipIf(findRedisServerBinary() === undefined)("edgelock dev", () => {
  it("prints the connection variables, serves requests and stops on request", async () => {
    const { out, io } = captureIo();
    let stop!: () => void;
    const stopSignal = new Promise<void>((resolve) => {
      stop = resolve;
    });
    let ready!: (server: DevServer) => void;
    const readyPromise = new Promise<DevServer>((resolve) => {
      ready = resolve;
    });
    const exit = main(
      [
        "dev",
        "--port",
        "0",
        "--backend",
        "redis-server",
        "--token",
        "cli-token",
        "--latency",
        "1",
        "--seed",
        "5",
      ],
      {
        ...io,
        stopSignal,
        onReady: ready,
      },
    );
    const server = await readyPromise;
    expect(out).toContain(`UPSTASH_REDIS_REST_URL=${server.url}`);
    expect(out).toContain("UPSTASH_REDIS_REST_TOKEN=cli-token");
    expect(out.some((line) => /^backend: redis-server — redis-server \d/.test(line))).toBe(true);
    expect(out).toContain("faults: latency 1 ms ± 0 ms, seed 5");
    expect(await upstash(server).ping()).toBe("PONG");
    stop();
    expect(await exit).toBe(0);
    await expect(fetch(`${server.url}/ping`)).rejects.toThrow();
  });

  it("runs as a script (npx tsx dev/cli.ts dev) and exits cleanly on SIGTERM", async () => {
    const cli = fileURLToPath(new URL("../../../dev/cli.ts", import.meta.url));
    const child = spawn(
      process.execPath,
      ["--import", "tsx", cli, "dev", "--port", "0", "--backend", "redis-server"],
      {
        cwd: fileURLToPath(new URL("../../..", import.meta.url)),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) =>
      child.once("exit", (code) => resolve(code)),
    );
    const deadline = Date.now() + 15_000;
    while (!/UPSTASH_REDIS_REST_TOKEN=\w+/.test(output)) {
      if (Date.now() > deadline) throw new Error(`CLI did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const url = /UPSTASH_REDIS_REST_URL=(\S+)/.exec(output)?.[1] ?? "";
    const token = /UPSTASH_REDIS_REST_TOKEN=(\S+)/.exec(output)?.[1] ?? "";
    const response = await fetch(`${url}/ping`, { headers: { authorization: `Bearer ${token}` } });
    expect(await response.json()).toEqual({ result: "PONG" });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output).toContain("stopping");
  });
});
