/**
 * The installed package as a user meets it at run time (check:snippets covers its types): the
 * packed tarball installed with `npm install` into a scratch project, whose PATH has no
 * `redis-server` and whose environment has no `REDIS_URL`, then used the way the docs say:
 *
 * 1. `npx edgelock --version` and `npx edgelock dev --port 0 --dev-vars .dev.vars` (embedded
 *    engine), a script locking through it with the installed `edgelock` and the real
 *    `@upstash/redis` (reentrancy, `client.scope()`, the fair and read-write locks, a semaphore
 *    and a count-down latch), run by Node,
 *    and on linux-x64 by Bun and Deno too (from their npm packages); the inspector page at
 *    `/_edgelock/` and `npx edgelock inspect --table` showing a lock held; then Ctrl-C (the
 *    served-requests summary, exit 0);
 * 2. "Testing your Worker" (docs/testing.md): its vitest config and its test, extracted from the
 *    guide, run against a small Hono Worker inside workerd through `@cloudflare/vitest-plugin`;
 *    then the same test under the README's copy of the config; beside it, the installed package's
 *    semaphore, count-down latch and push hand-off over a subscription (KINDS_TEST);
 *    its strict test tsconfig and env.d.ts from the guide type-check the test (`cloudflare:test`);
 * 3. the watchdog Worker template from `node_modules/edgelock/templates`: type-checked under its
 *    own tsconfig and bundled by `wrangler deploy --dry-run`;
 * 4. the README's Worker quickstart, verbatim, under `wrangler dev` WITHOUT `nodejs_compat`,
 *    against `edgelock dev --dev-vars .dev.vars`: it locks; `edgelock dev` restarted under the
 *    running `wrangler dev` keeps it working (the token is kept); Hono's `withLock()` with a
 *    client answers with LockScopeUnavailableError naming `nodejs_compat`.
 *
 * `npm install` resolves edgelock's own dependencies from the registry (or npm's cache), so a
 * dependency missing from package.json fails here. The user's dev tools (vitest, the vitest
 * plugin, wrangler, TypeScript, the Workers types) are linked from this repository.
 *
 * Usage: npx tsx scripts/check-installed.ts [--keep] [--only TEXT]
 *   --keep leaves the scratch project; --only runs the checks whose title contains TEXT
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { extractSnippets } from "./check-snippets.js";
import {
  installBeside,
  npmInstall,
  packTarball,
  REPO_ROOT,
  RUNTIME_PACKAGES,
} from "./packed-project.js";

/** The user's own dev tools, linked from this repository's node_modules. */
const LINKED_DEV_TOOLS = [
  "vitest",
  "@cloudflare/vitest-plugin",
  "@cloudflare/workers-types",
  "typescript",
  "wrangler",
];

/** Installed for real, at the versions this repository tests with (npm's cache has them). */
const USER_DEPENDENCIES = ["@upstash/redis", "hono"];

const STEP_TIMEOUT_MS = 120_000;

function repoVersion(name: string): string {
  const manifest = JSON.parse(
    readFileSync(join(REPO_ROOT, "node_modules", name, "package.json"), "utf8"),
  ) as { version: string };
  return manifest.version;
}

/** Terminal colour codes (vitest colours its summary even when told not to). */
function stripColours(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is the point
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** A script that printed `marker` must exit by itself within `graceMs` (else it is killed). */
interface ExitsAfter {
  readonly marker: string;
  readonly graceMs: number;
}

/** Runs a command to its end (or the timeout), collecting stdout and stderr together. */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  exitsAfter?: ExitsAfter,
) {
  return new Promise<Run>((done) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...env, PWD: cwd },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let grace: NodeJS.Timeout | undefined;
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (exitsAfter && grace === undefined && output.includes(exitsAfter.marker)) {
        grace = setTimeout(() => {
          output += `\n(still running ${exitsAfter.graceMs / 1000} s after "${exitsAfter.marker}": killed)`;
          child.kill("SIGKILL");
        }, exitsAfter.graceMs);
      }
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const timer = setTimeout(() => child.kill("SIGKILL"), STEP_TIMEOUT_MS);
    child.on("error", (error) => {
      clearTimeout(timer);
      clearTimeout(grace);
      done({ code: null, output: `${output}${String(error)}` });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      clearTimeout(grace);
      done({ code, output: stripColours(output) });
    });
  });
}

/** Resolves with the output so far once `pattern` appears in it, or rejects after `ms`. */
function waitForOutput(child: ChildProcess, pattern: RegExp, ms = 30_000): Promise<string> {
  return new Promise((found, failed) => {
    let output = "";
    const timer = setTimeout(
      () => failed(new Error(`timed out waiting for ${pattern}:\n${output}`)),
      ms,
    );
    const listen = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) {
        clearTimeout(timer);
        found(output);
      }
    };
    child.stdout?.on("data", listen);
    child.stderr?.on("data", listen);
    child.on("close", (code) => {
      clearTimeout(timer);
      failed(new Error(`exited ${code} before ${pattern}:\n${output}`));
    });
  });
}

/** The environment of a user's shell without Redis: `node` on PATH and nothing else. */
function userEnvironment(scratch: string): NodeJS.ProcessEnv {
  const bin = join(scratch, ".user-bin");
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, "node"));
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: bin, WRANGLER_SEND_METRICS: "false" };
  for (const name of ["REDIS_URL", "EDGELOCK_DEV_TOKEN", "NODE_OPTIONS"]) delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith("npm_")) delete env[name];
  return env;
}

/** A Node script as a user writes it against the installed package and a running dev server. */
const USE_LOCKS_SCRIPT = `import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { LockClient } from "edgelock";
import { PlainLockClient } from "edgelock/lock";

const vars = Object.fromEntries(
  readFileSync(".dev.vars", "utf8").trim().split("\\n").map((line) => {
    const at = line.indexOf("=");
    return [line.slice(0, at), JSON.parse(line.slice(at + 1))];
  }),
);
const redis = new Redis({ url: vars.UPSTASH_REDIS_REST_URL, token: vars.UPSTASH_REDIS_REST_TOKEN });
const client = new LockClient({ redis });
const other = new PlainLockClient({ redis });
const check = (ok, what) => { if (!ok) throw new Error("failed: " + what); };

const lock = client.lock("orders:1");
const outer = await lock.acquire({ leaseMs: 10_000 });
const inner = await lock.acquire({ leaseMs: 10_000, owner: outer.owner });
check((await lock.holdCount(outer.owner)) === 2, "the same owner re-enters");
check(inner.fencingToken === outer.fencingToken, "a re-entry keeps the fencing token");
check((await other.lock("orders:1").tryAcquire()) === null, "another owner is refused");
const waiting = other.lock("orders:1").acquire({ waitMs: 5_000 });
await inner.release();
await outer.release();
const next = await waiting;
check(next.fencingToken === outer.fencingToken + 1, "the next holder gets the next token");
await next.release();

const fair = await client.fairLock("queue:1").acquire({ leaseMs: 5_000 });
await fair.release();
const read = await client.readWriteLock("doc:1").readLock().acquire({ leaseMs: 5_000 });
await read.release();
const nested = await client.scope(async () => {
  const first = await client.lock("orders:2").acquire();
  const again = await client.lock("orders:2").acquire();
  const count = await client.lock("orders:2").holdCount(first.owner);
  await again.release();
  await first.release();
  return count;
});
check(nested === 2, "acquisitions in one client.scope() share an owner (AsyncLocalStorage)");
check(!(await lock.isLocked()), "every lock is free at the end");

const api = client.semaphore("api:1", { initialPermits: 2 });
const one = await api.acquire({ leaseMs: 5_000 });
const two = await api.acquire({ leaseMs: 5_000 });
check(one.fencingToken < two.fencingToken, "permit holds get growing fencing tokens");
check((await api.tryAcquire()) === null, "a full semaphore refuses one more permit");
await one.release();
await two.release();
check((await api.availablePermits()) === 2, "every permit is back");
const batch = client.countDownLatch("batch:1");
check(await batch.trySetCount(2), "the latch is set");
await batch.countDown();
check(!(await batch.await({ waitMs: 0 })), "the latch is closed at 1");
await batch.countDown();
check(await batch.await({ waitMs: 1_000 }), "the latch opens at 0");
console.log("locked and released through the installed package");
`;

/**
 * The locking script exits by itself this soon after its last line (a push waiter's stream
 * lingers 1 s for a next wait, then closes): Deno once stayed up here (docs/runtimes.md).
 */
const EXITS_AFTER_LOCKING: ExitsAfter = {
  marker: "locked and released",
  graceMs: 10_000,
};

/**
 * Other runtimes the docs name, from their npm packages (linux-x64 builds), pinned: the newest
 * Node beside the one npm scripts run on (22), Bun and Deno.
 */
const OTHER_RUNTIMES = [
  { name: "Node 24", spec: RUNTIME_PACKAGES.node24, binary: "bin/node", args: [] },
  { name: "Bun", spec: RUNTIME_PACKAGES.bun, binary: "bin/bun", args: [] },
  { name: "Deno", spec: RUNTIME_PACKAGES.deno, binary: "deno", args: ["run", "-A"] },
] as const;

/** Installs Bun and Deno beside the project (not into it); null where no build fits. */
function installOtherRuntimes(
  scratch: string,
): { name: string; path: string; args: readonly string[] }[] | null {
  if (process.platform !== "linux" || process.arch !== "x64") return null;
  const modules = installBeside(
    scratch,
    ".runtimes",
    OTHER_RUNTIMES.map((runtime) => runtime.spec),
  );
  return OTHER_RUNTIMES.map((runtime) => {
    const name = runtime.spec.slice(0, runtime.spec.lastIndexOf("@"));
    return {
      name: runtime.name,
      path: join(modules, name, runtime.binary),
      args: runtime.args,
    };
  });
}

/** The Worker the testing guide's test reaches: POST /webhook under withLock(). */
const GUIDE_WORKER = `import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { LockClient } from "edgelock";
import { middlewareFor } from "edgelock/hono";

type Bindings = { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string };
let locks: LockClient | undefined;
const app = new Hono<{ Bindings: Bindings }>();
const { withLock } = middlewareFor(app);
app.post(
  "/webhook",
  withLock({
    client: (c) => (locks ??= new LockClient({ redis: Redis.fromEnv(c.env) })),
    key: () => "orders:42",
  }),
  (c) => c.json({ fencingToken: c.get("lock").fencingToken }),
);
export default app;
`;

/**
 * Beside the guide's test, in the same project and config: the installed package's semaphore,
 * count-down latch and push hand-off over a subscription (the `upstash` profile's wake channel),
 * inside workerd.
 */
const KINDS_TEST = `import { env } from "cloudflare:test";
import { Redis } from "@upstash/redis/cloudflare";
import { LockClient } from "edgelock";
import { expect, it } from "vitest";

const client = () => new LockClient({ redis: Redis.fromEnv(env), prefix: "installed" });

it("limits concurrency with a semaphore", async () => {
  const exports = client().semaphore("exports");
  expect(await exports.trySetPermits(3)).toBe(true);
  const held = await exports.acquire({ permits: 2, leaseMs: 10_000 });
  expect(held.permits).toBe(2);
  expect(await exports.availablePermits()).toBe(1);
  expect(await exports.tryAcquire({ permits: 2, leaseMs: 10_000 })).toBeNull();
  await held.release();
  expect(await exports.availablePermits()).toBe(3);
});

it("opens a count-down latch when every part is done", async () => {
  const parts = client().countDownLatch("import");
  expect(await parts.trySetCount(2)).toBe(true);
  await parts.countDown();
  expect(await parts.await({ waitMs: 100 })).toBe(false);
  await parts.countDown();
  expect(await parts.await({ waitMs: 5_000 })).toBe(true);
});

it("hands a lock over by word on its channel (push mode)", async () => {
  const holder = client();
  const waiter = new LockClient({
    redis: Redis.fromEnv(env),
    prefix: "installed",
    scriptKeyLocking: true,
    wait: { mode: "push", wakeBy: "subscription" },
  });
  const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
  const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 8_000 });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const releasedAt = Date.now();
  await held.release();
  const handle = await waiting;
  expect(Date.now() - releasedAt).toBeLessThan(2_000);
  expect(handle.fencingToken).toBe(held.fencingToken + 1);
  await handle.release();
});
`;

/** The json block of a Markdown file that contains `marker`. */
function jsonBlockOf(file: string, marker: string, what: string): string {
  const blocks = [
    ...readFileSync(join(REPO_ROOT, file), "utf8").matchAll(/^```jsonc?\n([\s\S]*?)^```$/gm),
  ].map((match) => match[1] ?? "");
  const found = blocks.find((block) => block.includes(marker));
  if (!found) throw new Error(`${file} lost its ${what}`);
  return found;
}

/** The ```toml block of a Markdown file that contains `marker`. */
function tomlBlockOf(file: string, marker: string, what: string): string {
  const blocks = [
    ...readFileSync(join(REPO_ROOT, file), "utf8").matchAll(/^```toml\n([\s\S]*?)^```$/gm),
  ].map((match) => match[1] ?? "");
  const found = blocks.find((block) => block.includes(marker));
  if (!found) throw new Error(`${file} lost its ${what}`);
  return found;
}

/**
 * `edgelock dev` (writing `dir`/.dev.vars) and `wrangler dev` on the Worker in `dir`, both on free
 * loopback ports, for `use(worker URL, restart the REST server, the .dev.vars text)`.
 */
async function underWranglerDev<T>(
  scratch: string,
  dir: string,
  env: NodeJS.ProcessEnv,
  use: (worker: string, restartRest: () => Promise<void>) => Promise<T>,
): Promise<T> {
  const [restPort, workerPort] = await freePorts(2);
  const startRest = async () => {
    const server = spawn(
      join(scratch, "node_modules/.bin/edgelock"),
      ["dev", "--port", String(restPort), "--dev-vars", ".dev.vars"],
      { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    await waitForOutput(server, /written to \.dev\.vars/);
    return server;
  };
  let rest = await startRest();
  const wrangler = spawn(
    process.execPath,
    [
      join(scratch, "node_modules/wrangler/bin/wrangler.js"),
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(workerPort),
    ],
    { cwd: dir, env: { ...env, CI: "true", NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  try {
    await waitForOutput(wrangler, /Ready on/, 120_000);
    return await use(`http://127.0.0.1:${workerPort}`, async () => {
      // Under the running wrangler dev, which read .dev.vars once.
      await stopChild(rest);
      rest = await startRest();
    });
  } finally {
    await stopChild(wrangler);
    await stopChild(rest);
  }
}

/** Free loopback ports (closed again before use: a small race, fine for a check). */
async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    ports.push(
      await new Promise<number>((resolve, reject) => {
        const server = createServer();
        server.on("error", reject);
        server.listen(0, "127.0.0.1", () => {
          const address = server.address();
          const port = typeof address === "object" && address !== null ? address.port : 0;
          server.close(() => resolve(port));
        });
      }),
    );
  }
  return ports;
}

/** Stops a child with SIGINT (SIGKILL after 10 s); resolves with its exit code. */
function stopChild(child: ChildProcess): Promise<number | null> {
  return new Promise((stopped) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      stopped(child.exitCode);
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      stopped(code);
    });
    child.kill("SIGINT");
  });
}

/**
 * A compatibility date at which workerd 1.20261102.1 (wrangler 4.156.2) gives a Worker without
 * `nodejs_compat` no AsyncLocalStorage, the set-up of the issue 29 user: of the dates tried,
 * 2024-09-23, 2025-04-01, 2025-09-15, 2026-03-01 and 2026-08-01 have none; 2026-09-01 and later
 * have it without the flag.
 */
const WITHOUT_ALS_DATE = "2026-08-01";

/** Holds a lock for a minute and exits without releasing it: the inspector shows it held. */
const HOLD_LOCK_SCRIPT = `import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { LockClient } from "edgelock";

const vars = Object.fromEntries(
  readFileSync(".dev.vars", "utf8").trim().split("\\n").map((line) => {
    const at = line.indexOf("=");
    return [line.slice(0, at), JSON.parse(line.slice(at + 1))];
  }),
);
const client = new LockClient({
  redis: new Redis({ url: vars.UPSTASH_REDIS_REST_URL, token: vars.UPSTASH_REDIS_REST_TOKEN }),
});
const held = await client.lock("inspected").acquire({ leaseMs: 60_000 });
console.log("held with fencing token " + held.fencingToken);
`;

/**
 * docs/inspector.md from the packed package: `edgelock dev` serves the page at /_edgelock/
 * (without a token, with none in it), and `edgelock inspect --table` shows a lock held.
 */
async function checkInspector(scratch: string, env: NodeJS.ProcessEnv, banner: string) {
  const pageUrl = /^inspector: (\S+)$/m.exec(banner)?.[1];
  const url = /^UPSTASH_REDIS_REST_URL=(\S+)$/m.exec(banner)?.[1];
  const token = /^UPSTASH_REDIS_REST_TOKEN=(\S+)$/m.exec(banner)?.[1];
  if (!pageUrl || !url || !token)
    throw new Error(`no inspector URL, REST URL or token:\n${banner}`);
  const page = await fetch(pageUrl);
  const html = await page.text();
  if (page.status !== 200 || !html.includes("edgelock inspector") || html.includes(token))
    throw new Error(`the inspector page: HTTP ${page.status}:\n${html.slice(0, 500)}`);
  writeFileSync(join(scratch, "hold-lock.mjs"), HOLD_LOCK_SCRIPT);
  const held = await run(process.execPath, ["hold-lock.mjs"], scratch, env);
  if (held.code !== 0) throw new Error(`hold-lock.mjs exited ${held.code}:\n${held.output}`);
  const table = await run(
    join(scratch, "node_modules/.bin/edgelock"),
    ["inspect", "--table"],
    scratch,
    { ...env, UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token },
  );
  if (table.code !== 0 || !/^inspected\s+lock\s+held\s/m.test(table.output))
    throw new Error(`edgelock inspect --table exited ${table.code}:\n${table.output}`);
  return "edgelock dev serves the inspector page, edgelock inspect --table shows the lock held";
}

/** The README's Worker quickstart, verbatim. */
function workerQuickstart(): string {
  const snippets = extractSnippets("README.md", readFileSync(join(REPO_ROOT, "README.md"), "utf8"));
  const quickstart = snippets.find((snippet) => snippet.runtime === "worker");
  if (!quickstart) throw new Error("README.md lost its Worker quickstart (snippet: worker)");
  return quickstart.code;
}

/**
 * The scratch Worker's entry: /hono/* goes to a Hono app under withLock() with a client (which
 * needs nodejs_compat, absent here), /hold takes a lock for a minute and leaves it held (for
 * `edgelock inspect`), everything else to the README's quickstart.
 */
const QUICKSTART_ENTRY = `import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { LockClient } from "edgelock";
import { withLock } from "edgelock/hono";
import quickstart from "./quickstart";

type Bindings = { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string };
let locks: LockClient | undefined;
const hono = new Hono<{ Bindings: Bindings }>().basePath("/hono");
hono.onError((error, c) => c.text(\`\${error.name}: \${error.message}\`, 500));
hono.post(
  "/orders/:id",
  withLock({
    client: (c) => (locks ??= new LockClient({ redis: Redis.fromEnv(c.env) })),
    key: (c) => \`orders:\${c.req.param("id")}\`,
  }),
  (c) => c.text("ok"),
);

async function hold(env: Bindings): Promise<Response> {
  const client = new LockClient({ redis: Redis.fromEnv(env) });
  const held = await client.lock("held-by-worker").acquire({ leaseMs: 60_000 });
  return new Response(\`held \${held.fencingToken}\`);
}

export default {
  fetch(request: Request, env: Bindings, ctx: ExecutionContext) {
    if (new URL(request.url).pathname === "/hold") return hold(env);
    return new URL(request.url).pathname.startsWith("/hono/")
      ? hono.fetch(request, env, ctx)
      : quickstart.fetch(request, env, ctx);
  },
};
`;

/** The ts block of a Markdown file that contains `marker` (what it is: for the error). */
function snippetOf(file: string, marker: string, what: string): string {
  const snippets = extractSnippets(file, readFileSync(join(REPO_ROOT, file), "utf8"));
  const found = snippets.find((snippet) => snippet.code.includes(marker));
  if (!found) throw new Error(`${file} lost its ${what}`);
  return found.code;
}

/** The vitest config's file name the guide tells the user to create. */
function guideConfigFileName(): string {
  const named = /`(vitest\.config\.[cm]?ts)`/.exec(
    readFileSync(join(REPO_ROOT, "docs/testing.md"), "utf8"),
  );
  if (!named?.[1]) throw new Error("docs/testing.md does not name the vitest config file");
  return named[1];
}

function compatibilityDate(): string {
  const date = /compatibility_date\s*=\s*"([^"]+)"/.exec(
    readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8"),
  );
  if (!date?.[1]) throw new Error("wrangler.toml has no compatibility_date");
  return date[1];
}

type Check = (scratch: string, env: NodeJS.ProcessEnv) => Promise<string>;

const checks: ReadonlyArray<readonly [string, Check]> = [
  [
    "npx edgelock --version",
    async (scratch, env) => {
      const version = JSON.parse(
        readFileSync(join(scratch, "node_modules/edgelock/package.json"), "utf8"),
      ).version as string;
      const result = await run(
        join(scratch, "node_modules/.bin/edgelock"),
        ["--version"],
        scratch,
        env,
      );
      if (result.code !== 0 || result.output.trim() !== version)
        throw new Error(`expected ${version}, exit 0; got exit ${result.code}:\n${result.output}`);
      return version;
    },
  ],
  [
    "npx edgelock dev without redis-server; Node 22 and 24, Bun and Deno lock through it; Ctrl-C",
    async (scratch, env) => {
      const server = spawn(
        join(scratch, "node_modules/.bin/edgelock"),
        ["dev", "--port", "0", "--dev-vars", ".dev.vars"],
        { cwd: scratch, env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let summary = "";
      let ran = "";
      server.stdout?.on("data", (chunk: Buffer) => (summary += chunk.toString()));
      server.stderr?.on("data", (chunk: Buffer) => (summary += chunk.toString()));
      try {
        const banner = await waitForOutput(server, /written to \.dev\.vars/);
        if (!/backend: embedded/.test(banner))
          throw new Error(`not the embedded engine:\n${banner}`);
        writeFileSync(join(scratch, "use-locks.mjs"), USE_LOCKS_SCRIPT);
        const runtimes = [
          {
            name: `Node ${process.versions.node}`,
            path: process.execPath,
            args: [] as readonly string[],
          },
          ...(installOtherRuntimes(scratch) ?? []),
        ];
        for (const runtime of runtimes) {
          const used = await run(
            runtime.path,
            [...runtime.args, "use-locks.mjs"],
            scratch,
            env,
            EXITS_AFTER_LOCKING,
          );
          if (used.code !== 0 || !used.output.includes("locked and released"))
            throw new Error(`${runtime.name}: use-locks.mjs exited ${used.code}:\n${used.output}`);
        }
        ran = runtimes.map((runtime) => runtime.name).join(", ");
        ran += `; ${await checkInspector(scratch, env, banner)}`;
      } finally {
        if (server.exitCode === null) server.kill("SIGINT");
      }
      const code = await new Promise<number | null>((exited) => {
        if (server.exitCode !== null) exited(server.exitCode);
        else server.on("close", exited);
      });
      const served = /served \d+ requests[^\n]*/.exec(summary)?.[0];
      if (code !== 0 || !served) throw new Error(`Ctrl-C: exit ${code}, output:\n${summary}`);
      return `${ran}; ${served}`;
    },
  ],
  [
    "Testing your Worker (docs/testing.md) inside workerd",
    async (scratch, env) => {
      writeFileSync(
        join(scratch, "wrangler.toml"),
        `name = "edgelock-user"\nmain = "src/worker.ts"\ncompatibility_date = "${compatibilityDate()}"\ncompatibility_flags = ["nodejs_compat"]\n`,
      );
      mkdirSync(join(scratch, "src"), { recursive: true });
      writeFileSync(join(scratch, "src/worker.ts"), GUIDE_WORKER);
      mkdirSync(join(scratch, "test"), { recursive: true });
      writeFileSync(
        join(scratch, "test/worker.test.ts"),
        snippetOf("docs/testing.md", 'from "cloudflare:test"', "test"),
      );
      writeFileSync(join(scratch, "test/kinds.test.ts"), KINDS_TEST);
      writeFileSync(
        join(scratch, "test/tsconfig.json"),
        jsonBlockOf("docs/testing.md", "@cloudflare/vitest-plugin/types", "test tsconfig"),
      );
      writeFileSync(
        join(scratch, "test/env.d.ts"),
        snippetOf("docs/testing.md", "declare namespace Cloudflare", "env.d.ts"),
      );
      const typed = await run(
        process.execPath,
        [join(scratch, "node_modules/typescript/bin/tsc"), "-p", "test/tsconfig.json"],
        scratch,
        env,
      );
      if (typed.code !== 0)
        throw new Error(`tsc -p test/tsconfig.json exited ${typed.code}:\n${typed.output}`);
      for (const file of ["docs/testing.md"]) {
        writeFileSync(
          join(scratch, guideConfigFileName()),
          snippetOf(file, "cloudflareTest(", "vitest config"),
        );
        const result = await run(
          process.execPath,
          [join(scratch, "node_modules/vitest/vitest.mjs"), "run"],
          scratch,
          { ...env, CI: "true", NO_COLOR: "1" },
        );
        if (result.code !== 0 || !/Tests\s+4 passed/.test(result.output))
          throw new Error(`vitest with ${file}'s config exited ${result.code}:\n${result.output}`);
      }
      return (
        "the guide's test type-checks (strict, cloudflare:test) and passed, " +
        "beside a semaphore, a latch and push over a subscription from the installed package"
      );
    },
  ],
  [
    "the watchdog Worker template: tsc and wrangler deploy --dry-run",
    async (scratch, env) => {
      const template = join(scratch, "edgelock-watchdog");
      cpSync(join(scratch, "node_modules/edgelock/templates/watchdog-worker"), template, {
        recursive: true,
      });
      symlinkSync(join(scratch, "node_modules"), join(template, "node_modules"), "dir");
      const typed = await run(
        process.execPath,
        [join(scratch, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"],
        template,
        env,
      );
      if (typed.code !== 0) throw new Error(`tsc exited ${typed.code}:\n${typed.output}`);
      const bundled = await run(
        process.execPath,
        [
          join(scratch, "node_modules/wrangler/bin/wrangler.js"),
          "deploy",
          "--dry-run",
          "--outdir",
          "out",
        ],
        template,
        env,
      );
      if (bundled.code !== 0 || !existsSync(join(template, "out/index.js")))
        throw new Error(`wrangler deploy --dry-run exited ${bundled.code}:\n${bundled.output}`);
      return "type-checks and bundles";
    },
  ],
  [
    "the README's Worker quickstart verbatim (its src/index.ts and wrangler.toml) under wrangler dev",
    async (scratch, env) => {
      const dir = join(scratch, "readme-worker");
      mkdirSync(join(dir, "src"), { recursive: true });
      symlinkSync(join(scratch, "node_modules"), join(dir, "node_modules"), "dir");
      writeFileSync(join(dir, "src/index.ts"), workerQuickstart());
      writeFileSync(
        join(dir, "wrangler.toml"),
        tomlBlockOf("README.md", 'main = "src/index.ts"', "Quickstart wrangler.toml"),
      );
      return underWranglerDev(scratch, dir, env, async (worker) => {
        const issue = async (customer: string) => {
          const res = await fetch(`${worker}/?customer=${customer}`);
          const text = await res.text();
          const number = /^invoice \w+-(\d+) issued$/m.exec(text)?.[1];
          if (res.status !== 200 || number === undefined)
            throw new Error(`the quickstart answered ${res.status}: ${text}`);
          return Number(number);
        };
        if ((await issue("acme")) !== 1) throw new Error("the first invoice is not number 1");
        // Eight at once for one customer: the lock makes the read and the write one step each.
        const numbers = await Promise.all(Array.from({ length: 8 }, () => issue("globex")));
        const sorted = [...numbers].sort((x, y) => x - y).join(",");
        if (sorted !== "1,2,3,4,5,6,7,8")
          throw new Error(`eight concurrent invoices were numbered ${sorted}`);
        return "runs as written; eight concurrent requests of one customer got invoices 1 to 8";
      });
    },
  ],
  [
    "the quickstart without nodejs_compat at an older date under wrangler dev; edgelock dev restarted",
    async (scratch, env) => {
      const dir = join(scratch, "quickstart-worker");
      mkdirSync(join(dir, "src"), { recursive: true });
      symlinkSync(join(scratch, "node_modules"), join(dir, "node_modules"), "dir");
      writeFileSync(join(dir, "src/quickstart.ts"), workerQuickstart());
      writeFileSync(join(dir, "src/index.ts"), QUICKSTART_ENTRY);
      // No compatibility_flags: the quickstart must not need nodejs_compat. The date is one where
      // a Worker without the flag has no AsyncLocalStorage (later dates give it without the flag).
      writeFileSync(
        join(dir, "wrangler.toml"),
        `name = "quickstart"\nmain = "src/index.ts"\ncompatibility_date = "${WITHOUT_ALS_DATE}"\n`,
      );
      return underWranglerDev(scratch, dir, env, async (worker, restartRest) => {
        // The quickstart numbers a customer's invoices under the customer's lock.
        const issue = async (customer: string, number: number) => {
          const res = await fetch(`${worker}/?customer=${customer}`);
          const text = await res.text();
          if (res.status !== 200 || !text.includes(`invoice ${customer}-${number} issued`))
            throw new Error(`the quickstart answered ${res.status}: ${text}`);
        };
        await issue("a", 1);
        await issue("a", 2);
        await restartRest();
        await issue("b", 1);
        const hono = await fetch(`${worker}/hono/orders/1`, { method: "POST" });
        const said = await hono.text();
        if (
          hono.status !== 500 ||
          !said.startsWith("LockScopeUnavailableError") ||
          !said.includes("nodejs_compat")
        )
          throw new Error(`withLock() without nodejs_compat answered ${hono.status}: ${said}`);
        // docs/inspector.md: `edgelock inspect` shows a lock this Worker holds.
        const holding = await fetch(`${worker}/hold`);
        if (holding.status !== 200) throw new Error(`/hold answered ${holding.status}`);
        const vars = readFileSync(join(dir, ".dev.vars"), "utf8");
        const url = /^UPSTASH_REDIS_REST_URL="?([^"\s]+)"?$/m.exec(vars)?.[1];
        const token = /^UPSTASH_REDIS_REST_TOKEN="?([^"\s]+)"?$/m.exec(vars)?.[1];
        if (!url || !token) throw new Error(".dev.vars lost the REST URL or token");
        const table = await run(
          join(scratch, "node_modules/.bin/edgelock"),
          ["inspect", "--table"],
          dir,
          { ...env, UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token },
        );
        if (table.code !== 0 || !/^held-by-worker\s+lock\s+held\s/m.test(table.output))
          throw new Error(`edgelock inspect --table exited ${table.code}:\n${table.output}`);
        return "locks without nodejs_compat, survives an edgelock dev restart; withLock() names nodejs_compat; edgelock inspect shows a lock the Worker holds";
      });
    },
  ],
];

async function main(): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), "edgelock-installed-"));
  const keep = process.argv.includes("--keep");
  let failures = 0;
  try {
    const tarball = packTarball(scratch);
    writeFileSync(
      join(scratch, "package.json"),
      // What `npm init -y` writes: a CommonJS package, as most Worker projects start.
      `${JSON.stringify({ name: "edgelock-user", version: "1.0.0", private: true, type: "commonjs" }, null, 2)}\n`,
    );
    console.log(`npm install ${tarball.split("/").at(-1)} ${USER_DEPENDENCIES.join(" ")}`);
    npmInstall(scratch, [
      tarball,
      ...USER_DEPENDENCIES.map((name) => `${name}@${repoVersion(name)}`),
    ]);
    for (const name of LINKED_DEV_TOOLS) {
      const link = join(scratch, "node_modules", name);
      mkdirSync(resolve(link, ".."), { recursive: true });
      symlinkSync(join(REPO_ROOT, "node_modules", name), link, "dir");
    }
    const env = userEnvironment(scratch);
    const only = process.argv.indexOf("--only");
    const wanted = only === -1 ? undefined : process.argv[only + 1];
    for (const [what, check] of checks.filter(
      ([title]) => wanted === undefined || title.includes(wanted),
    )) {
      const started = Date.now();
      try {
        const result = await check(scratch, env);
        console.log(`ok   ${what}: ${result} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      } catch (error) {
        failures++;
        console.error(`FAIL ${what}\n${error instanceof Error ? error.message : String(error)}`);
      }
    }
  } finally {
    if (keep) console.log(`scratch project kept: ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
  console.log(
    failures === 0 ? "the installed package works as documented" : `${failures} check(s) failed`,
  );
  return failures === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exitCode = await main();
