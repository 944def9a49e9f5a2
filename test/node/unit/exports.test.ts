/**
 * The public surface, pinned: per package entry (package.json "exports", read from the sources
 * they are built from), the sorted names it exports, and a doc comment on each. An added or
 * removed export fails here until this list says so, a deliberate change like a script's SHA-1
 * (docs/api.md, "What the entries export").
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");

const PINNED: Readonly<Record<string, readonly string[]>> = {
  ".": [
    "AcquireOptions",
    "AnyEdgelockError",
    "CountDownLatch",
    "CountDownLatchOptions",
    "EdgelockError",
    "EdgelockErrorName",
    "FairLock",
    "FairLockOptions",
    "HeldLock",
    "HoldKind",
    "InProcessRenewerOptions",
    "LatchAwaitOptions",
    "Lock",
    "LockAbortedError",
    "LockBackendError",
    "LockBudgetExceededError",
    "LockClient",
    "LockClientOptions",
    "LockEvent",
    "LockEventListener",
    "LockEventType",
    "LockHandle",
    "LockInputError",
    "LockLostError",
    "LockNotHeldError",
    "LockScopeUnavailableError",
    "LockUpgradeError",
    "LockWaitTimeoutError",
    "MultiLock",
    "MultiLockHandle",
    "MultiLockMember",
    "PermitHandle",
    "PermitOptions",
    "PlainLockClient",
    "QuorumLock",
    "QuorumLockHandle",
    "QuorumLostError",
    "QuorumTally",
    "QuorumUnreachableError",
    "QuorumWaitTimeoutError",
    "ReadLock",
    "ReadWriteLock",
    "ReadWriteLockOptions",
    "RedLock",
    "RedLockOptions",
    "RedisLike",
    "Renewal",
    "RenewalTarget",
    "Renewer",
    "Semaphore",
    "SemaphoreCapacityError",
    "SemaphoreNotInitializedError",
    "SemaphoreOptions",
    "SemaphoreState",
    "WaitOptions",
    "WaitWhy",
    "WriteLock",
    "inProcessRenewer",
    "isEdgelockError",
  ],
  "./lock": [
    "AcquireOptions",
    "AnyEdgelockError",
    "EdgelockError",
    "EdgelockErrorName",
    "HeldLock",
    "HoldKind",
    "InProcessRenewerOptions",
    "Lock",
    "LockAbortedError",
    "LockBackendError",
    "LockBudgetExceededError",
    "LockClientOptions",
    "LockEvent",
    "LockEventListener",
    "LockEventType",
    "LockHandle",
    "LockInputError",
    "LockLostError",
    "LockNotHeldError",
    "LockScopeUnavailableError",
    "LockWaitTimeoutError",
    "PlainLockClient",
    "RedisLike",
    "Renewal",
    "RenewalTarget",
    "Renewer",
    "WaitOptions",
    "WaitWhy",
    "inProcessRenewer",
    "isEdgelockError",
  ],
  "./hono": [
    "AcquirableLock",
    "AppMiddleware",
    "BODY_OMITTED_HEADER",
    "ConcurrencyBusy",
    "ConcurrencyLimitOptions",
    "ConcurrencyLimitVariables",
    "IdempotencyContext",
    "IdempotencyOptions",
    "IdempotencyScope",
    "IdempotencyVariables",
    "KeyExtractor",
    "LockBusy",
    "LockChoice",
    "LockClientSource",
    "MiddlewareFailure",
    "REPLAY_HEADER",
    "RecordedResponse",
    "ReleasableHold",
    "WithLockOptions",
    "WithLockSettings",
    "WithLockVariables",
    "concurrencyLimit",
    "fromHeader",
    "fromJsonBody",
    "githubDelivery",
    "idempotency",
    "logFailure",
    "middlewareFor",
    "requestFingerprint",
    "standardWebhookId",
    "stripeEventId",
    "withLock",
  ],
  "./inspector": [
    "ActionResult",
    "InspectedHolder",
    "InspectedLatch",
    "InspectedLock",
    "InspectedPermitHold",
    "InspectedPermitWaiter",
    "InspectedReadHold",
    "InspectedSemaphore",
    "InspectedWaiter",
    "InspectedWaits",
    "InspectorAccess",
    "InspectorHandlerOptions",
    "InspectorOptions",
    "InspectorSnapshot",
    "RecentWait",
    "RecentWaitStep",
    "RecentWaitsOptions",
    "RecentWaitsRecorder",
    "RefreshCost",
    "inspector",
    "inspectorHandler",
    "recordRecentWaits",
  ],
  "./metrics": [
    "AnalyticsEngineDatasetLike",
    "AnalyticsEngineSinkOptions",
    "MeterLike",
    "MetricsSink",
    "analyticsEngineSink",
    "openTelemetrySink",
    "recordMetrics",
  ],
  "./durable-object": [
    "DurableObjectWatchdog",
    "DurableObjectWatchdogOptions",
    "EndReason",
    "LockWatchdog",
    "ShardBy",
    "WatchdogEnv",
    "WatchdogNamespace",
    "WatchdogStatus",
    "WatchedLock",
    "durableObjectWatchdog",
  ],
  "./dev": [
    "Backend",
    "BackendChoice",
    "BackendKind",
    "BlockingMode",
    "DevServer",
    "DevServerFaults",
    "DevServerOptions",
    "FaultCounts",
    "FaultOptions",
    "ReplicaOptions",
    "RouteKind",
    "ScriptLock",
    "ServerProfile",
    "ServerStats",
    "StatsSnapshot",
    "startDevServer",
  ],
  "./testing": [
    "EdgelockGlobalSetup",
    "ProvidedDevServer",
    "ProvidingProject",
    "UpstashBindings",
    "default",
    "edgelockGlobalSetup",
    "upstashBindings",
  ],
};

/**
 * Declared in src/wait/, whose comments issue 43's work rewrites at the same time (the `mode`
 * JSDoc): their doc comments come with that merge. Documented, a name must leave this list.
 */
const DOC_COMMENT_PENDING: ReadonlySet<string> = new Set(["AcquireOptions", "WaitOptions"]);

/** Each entry of package.json "exports" and the source its built file comes from. */
function packageEntries(): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    exports: Record<string, { default: string }>;
  };
  return new Map(
    Object.entries(manifest.exports).map(([entry, target]) => [
      entry,
      join(ROOT, target.default.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts")),
    ]),
  );
}

interface ExportedName {
  readonly name: string;
  readonly documented: boolean;
}

/** The names each source exports, each with whether its declaration carries a doc comment. */
function exportsOf(sources: readonly string[]): Map<string, readonly ExportedName[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, "tsconfig.json"),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  const program = ts.createProgram(sources, { ...config?.options, noEmit: true });
  const checker = program.getTypeChecker();
  const result = new Map<string, readonly ExportedName[]>();
  for (const source of sources) {
    const file = program.getSourceFile(source);
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error(`${source}: not a module`);
    result.set(
      source,
      checker
        .getExportsOfModule(module)
        .map((exported) => {
          const target =
            exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
          const documented =
            target.getDocumentationComment(checker).length > 0 ||
            exported.getDocumentationComment(checker).length > 0;
          return { name: exported.name, documented };
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    );
  }
  return result;
}

describe("the public surface", () => {
  const entries = packageEntries();
  const exported = exportsOf([...entries.values()]);

  it("pins every package entry", () => {
    expect([...entries.keys()].sort()).toEqual(Object.keys(PINNED).sort());
  });

  it.each([...entries])("%s exports exactly its pinned names", (entry, source) => {
    expect(exported.get(source)?.map(({ name }) => name)).toEqual(PINNED[entry]);
  });

  it.each([...entries])("every export of %s has a doc comment", (_entry, source) => {
    const undocumented = (exported.get(source) ?? [])
      .filter(({ documented, name }) => !documented && !DOC_COMMENT_PENDING.has(name))
      .map(({ name }) => name);
    expect(undocumented).toEqual([]);
  });

  it("lists as pending only names still without a doc comment", () => {
    const undocumented = new Set(
      [...exported.values()].flat().flatMap(({ documented, name }) => (documented ? [] : [name])),
    );
    expect([...DOC_COMMENT_PENDING].filter((name) => !undocumented.has(name))).toEqual([]);
  });
});
