/** The `edgelock` command line. */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEV_HELP, HELP, main, parseDevArgs, UsageError } from "../../../dev/cli.js";
import type { DevServer } from "../../../dev/index.js";
import { redisServerUnderTest } from "../../support/backends.js";
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
      readOnlyToken: undefined,
      profile: "upstash",
      blocking: "immediate",
      backend: "auto",
      faults: {},
      devVars: undefined,
      verbose: false,
    });
  });

  it("takes the profile from --profile, else EDGELOCK_DEV_PROFILE", () => {
    const env = { EDGELOCK_DEV_PROFILE: "redis" };
    expect(parseDevArgs([], env).profile).toBe("redis");
    expect(parseDevArgs(["--profile", "upstash"], env).profile).toBe("upstash");
    expect(parseDevArgs(["--profile", "upstash", "--blocking", "error"])).toMatchObject({
      profile: "upstash",
      blocking: "error",
    });
    expect(() => parseDevArgs([], { EDGELOCK_DEV_PROFILE: "x" })).toThrow(/EDGELOCK_DEV_PROFILE/);
  });

  it("takes the token from EDGELOCK_DEV_TOKEN unless --token is given", () => {
    const env = { EDGELOCK_DEV_TOKEN: "stable" };
    expect(parseDevArgs([], env).token).toBe("stable");
    expect(parseDevArgs(["--token", "flag"], env).token).toBe("flag");
    expect(parseDevArgs([], { EDGELOCK_DEV_TOKEN: "" }).token).toBeUndefined();
    expect(() => parseDevArgs([], { EDGELOCK_DEV_TOKEN: "has space" })).toThrow(
      /EDGELOCK_DEV_TOKEN/,
    );
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
        "--dev-vars",
        ".dev.vars",
        "--verbose",
        "--read-only-token",
        "ro",
        "--profile",
        "upstash",
        "--blocking",
        "error",
      ]),
    ).toEqual({
      port: 0,
      host: "0.0.0.0",
      token: "t",
      readOnlyToken: "ro",
      profile: "upstash",
      blocking: "error",
      backend: { url: "redis://h:1" },
      faults: {
        latencyMs: 20,
        jitterMs: 5,
        dropAfterExecute: 0.1,
        failBeforeExecute: 0.2,
        seed: 42,
      },
      devVars: ".dev.vars",
      verbose: true,
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
    [["--profile", "upstsh"]],
    [["--profile", "redis", "--blocking", "error"]],
    [["--profile", "upstash", "--blocking", "never"]],
    [["--read-only-token", ""]],
  ])("rejects %j", (args) => {
    expect(() => parseDevArgs(args)).toThrow(UsageError);
  });

  it("prints help, and exits non-zero on misuse", async () => {
    const help = captureIo();
    expect(await main(["--help"], help.io)).toBe(0);
    expect(help.out.join("\n")).toBe(HELP);
    // Issue 44: the stats route wants the token, as every route does; the help says how.
    const devHelp = captureIo();
    expect(await main(["dev", "--help"], devHelp.io)).toBe(0);
    expect(devHelp.out.join("\n")).toContain(
      'curl -H "Authorization: Bearer $UPSTASH_REDIS_REST_TOKEN" <url>/_edgelock/stats',
    );
    expect(await main([], captureIo().io)).toBe(1);
    const unknown = captureIo();
    expect(await main(["serve"], unknown.io)).toBe(2);
    expect(unknown.err[0]).toMatch(/unknown command "serve"/);
    const badOption = captureIo();
    expect(await main(["dev", "--nope"], badOption.io)).toBe(2);
    expect(badOption.err).toContain('run "edgelock dev --help" for usage');
  });

  it("has help per command, and a version", async () => {
    const devHelp = captureIo();
    expect(await main(["dev", "--help"], devHelp.io)).toBe(0);
    expect(devHelp.out.join("\n")).toBe(DEV_HELP);
    expect(DEV_HELP).not.toBe(HELP);
    for (const option of ["--token", "--dev-vars", "--verbose", "EDGELOCK_DEV_TOKEN"]) {
      expect(DEV_HELP).toContain(option);
    }
    const version = captureIo();
    expect(await main(["--version"], version.io)).toBe(0);
    const manifest = JSON.parse(
      await readFile(new URL("../../../package.json", import.meta.url), "utf8"),
    ) as { version: string };
    expect(version.out).toEqual([manifest.version]);
  });
});

/** Runs `edgelock dev` in-process until the returned stop() is called. */
async function runDevUntilStopped(args: readonly string[], env: Record<string, string> = {}) {
  const captured = captureIo();
  let stop!: () => void;
  const stopSignal = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let ready!: (server: DevServer) => void;
  const readyPromise = new Promise<DevServer>((resolve) => {
    ready = resolve;
  });
  const exit = main(["dev", ...args], { ...captured.io, env, stopSignal, onReady: ready });
  const server = await Promise.race([
    readyPromise,
    exit.then((code) => {
      throw new Error(`exited ${code}: ${captured.err.join("\n")}`);
    }),
  ]);
  return {
    ...captured,
    server,
    stop: () => {
      stop();
      return exit;
    },
  };
}

describe("edgelock dev on the embedded engine", () => {
  it("writes the connection variables to --dev-vars, keeping the file's other lines", async () => {
    const dir = await mkdtemp(join(tmpdir(), "edgelock-cli-"));
    const file = join(dir, ".dev.vars");
    await writeFile(file, 'API_KEY="k"\nUPSTASH_REDIS_REST_URL="http://old"\n');
    try {
      const run = await runDevUntilStopped(
        ["--port", "0", "--backend", "embedded", "--dev-vars", file],
        { EDGELOCK_DEV_TOKEN: "stable-token" },
      );
      expect(run.server.token).toBe("stable-token");
      expect(await readFile(file, "utf8")).toBe(
        `API_KEY="k"\nUPSTASH_REDIS_REST_URL="${run.server.url}"\n` +
          'UPSTASH_REDIS_REST_TOKEN="stable-token"\n',
      );
      expect(await run.stop()).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps the token across restarts with --dev-vars, so a running wrangler dev keeps working", async () => {
    const dir = await mkdtemp(join(tmpdir(), "edgelock-cli-"));
    const file = join(dir, ".dev.vars");
    try {
      const first = await runDevUntilStopped([
        "--port",
        "0",
        "--backend",
        "embedded",
        "--dev-vars",
        file,
      ]);
      const token = first.server.token;
      expect(await first.stop()).toBe(0);
      // A client configured from the first start's file (as wrangler dev is) still gets in.
      const second = await runDevUntilStopped([
        "--port",
        "0",
        "--backend",
        "embedded",
        "--dev-vars",
        file,
      ]);
      expect(second.server.token).toBe(token);
      const res = await fetch(`${second.server.url}/ping`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(await second.stop()).toBe(0);
      // --token and EDGELOCK_DEV_TOKEN still win.
      const third = await runDevUntilStopped([
        "--port",
        "0",
        "--backend",
        "embedded",
        "--dev-vars",
        file,
        "--token",
        "chosen",
      ]);
      expect(third.server.token).toBe("chosen");
      expect(await third.stop()).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("never takes a token from a --dev-vars file whose URL is not local (a real Upstash one)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "edgelock-cli-"));
    const file = join(dir, ".dev.vars");
    await writeFile(
      file,
      'UPSTASH_REDIS_REST_URL="https://eu1-real.upstash.io"\nUPSTASH_REDIS_REST_TOKEN="real-secret"\n',
    );
    try {
      const run = await runDevUntilStopped([
        "--port",
        "0",
        "--backend",
        "embedded",
        "--dev-vars",
        file,
      ]);
      expect(run.server.token).not.toBe("real-secret");
      expect(run.out.join("\n")).not.toContain("real-secret");
      expect(await run.stop()).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("logs requests under --verbose and sums up what it served on exit", async () => {
    const run = await runDevUntilStopped(["--port", "0", "--backend", "embedded", "--verbose"]);
    const redis = upstash(run.server);
    await redis.set("k", "v");
    await redis.get("k");
    await fetch(`${run.server.url}/get/k`, { headers: { authorization: "Bearer wrong" } });
    expect(await run.stop()).toBe(0);
    expect(run.err.some((line) => / set$/.test(line))).toBe(true);
    expect(run.err.some((line) => / get$/.test(line))).toBe(true);
    expect(run.err.some((line) => /answered HTTP 401$/.test(line))).toBe(true);
    const summary = run.out.find((line) => line.startsWith("served "));
    expect(summary).toMatch(
      /^served 3 requests, 2 commands \((set 1, get 1|get 1, set 1)\), 2 billed, \d+ B in, \d+ B out; HTTP 401 ×1$/,
    );
  });

  it("--profile upstash: says so, logs and sums up global-lock scripts and rejections", async () => {
    const run = await runDevUntilStopped(["--port", "0", "--backend", "embedded", "--verbose"], {
      EDGELOCK_DEV_PROFILE: "upstash",
    });
    const redis = upstash(run.server);
    await redis.eval("return redis.call('SET', KEYS[1], 'v')", ["billed"], []);
    await expect(
      redis.eval("#!lua flags=allow-key-locking\nreturn redis.call('GET', ARGV[1])", [], ["x"]),
    ).rejects.toThrow(/Dynamic keys are not allowed/);
    const ro = await fetch(`${run.server.url}/set/k/v?_token=${run.server.readOnlyToken}`);
    expect(ro.status).toBe(400);
    expect(await run.stop()).toBe(0);
    expect(run.out).toContain("profile: upstash (blocking commands: immediate)");
    expect(run.out).toContain(`(read-only token: ${run.server.readOnlyToken})`);
    expect(
      run.err.some((line) => /eval [0-9a-f]{12}… runs under Upstash's global lock$/.test(line)),
    ).toBe(true);
    expect(run.err.some((line) => /rejected: ERR Dynamic keys .* Key was: x$/.test(line))).toBe(
      true,
    );
    expect(run.err.some((line) => / eval; billed 2 \(1 run by scripts\)$/.test(line))).toBe(true);
    const summary = run.out.find((line) => line.startsWith("served "));
    // The rejected script's GET was refused before it ran: it is not billed.
    expect(summary).toMatch(/, 2 commands \(eval 2\), 3 billed \(1 run by scripts\), /);
    expect(summary).toMatch(
      /; scripts: 1 under Upstash's global lock, 1 with allow-key-locking, 1 dynamic-key rejections$/,
    );
  });

  it("suggests --port 0 when the port is taken", async () => {
    const first = await runDevUntilStopped(["--port", "0", "--backend", "embedded"]);
    try {
      const port = new URL(first.server.url).port;
      const second = captureIo();
      expect(await main(["dev", "--port", port, "--backend", "embedded"], second.io)).toBe(2);
      expect(second.err[0]).toMatch(/already in use: .*--port 0 for any free port/);
    } finally {
      await first.stop();
    }
  });
});

// guard: starts a redis-server of its own; redisServerUnderTest throws under CI=true without one.
describe.runIf(redisServerUnderTest())("edgelock dev", () => {
  it("prints the connection variables, serves requests and stops on request", async () => {
    const run = await runDevUntilStopped([
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
    ]);
    const { out, server } = run;
    expect(out).toContain(`UPSTASH_REDIS_REST_URL=${server.url}`);
    expect(out).toContain("UPSTASH_REDIS_REST_TOKEN=cli-token");
    expect(out.some((line) => /^backend: redis-server — redis-server \d/.test(line))).toBe(true);
    expect(out).toContain("faults: latency 1 ms ± 0 ms, seed 5");
    expect(await upstash(server).ping()).toBe("PONG");
    expect(await run.stop()).toBe(0);
    await expect(fetch(`${server.url}/ping`)).rejects.toThrow("fetch failed");
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
