/** The parent's side of the bench backend: starts the child process and talks to it over IPC. */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ServerProfile } from "../../dev/profile/settings.js";
import type {
  LatencyModel,
  ReadyMessage,
  Reply,
  RequestBody,
  WireCounts,
  WireSnapshot,
} from "./protocol.js";

export interface BenchBackend {
  readonly restUrl: string;
  readonly token: string;
  readonly tcpPort: number;
  readonly redisPort: number;
  readonly description: string;
  setLatency(model: LatencyModel): Promise<void>;
  snapshot(): Promise<WireSnapshot>;
  close(): Promise<void>;
}

const SERVER_SCRIPT = fileURLToPath(new URL("./server-process.ts", import.meta.url));

export async function startBenchBackend(profile: ServerProfile): Promise<BenchBackend> {
  // The child runs TypeScript through tsx, like the parent.
  const child = fork(SERVER_SCRIPT, [profile], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const ready = await new Promise<ReadyMessage>((resolve, reject) => {
    const onMessage = (message: ReadyMessage | Reply) => {
      if ("type" in message && message.type === "ready") {
        child.off("message", onMessage);
        resolve(message);
      }
    };
    child.on("message", onMessage);
    child.once("exit", (code) => reject(new Error(`bench backend exited early (code ${code})`)));
  });

  let nextId = 1;
  const waiting = new Map<number, (reply: Reply) => void>();
  child.on("message", (message: ReadyMessage | Reply) => {
    if ("id" in message) {
      waiting.get(message.id)?.(message);
      waiting.delete(message.id);
    }
  });
  const call = (request: RequestBody): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (reply) =>
        reply.error === undefined ? resolve(reply) : reject(new Error(reply.error)),
      );
      child.send({ ...request, id });
    });

  let closing: Promise<void> | undefined;
  return {
    restUrl: ready.restUrl,
    token: ready.token,
    tcpPort: ready.tcpPort,
    redisPort: ready.redisPort,
    description: ready.description,
    setLatency: async (model) => {
      await call({ op: "latency", model });
    },
    snapshot: async () => {
      const reply = await call({ op: "snapshot" });
      if (reply.snapshot === undefined) throw new Error("bench backend sent no snapshot");
      return reply.snapshot;
    },
    close: () => {
      closing ??= (async () => {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        await call({ op: "close" });
        await exited;
      })();
      return closing;
    },
  };
}

/** What crossed one transport between two snapshots. */
export function wireDelta(after: WireCounts, before: WireCounts): WireCounts {
  const names = new Set([
    ...Object.keys(after.commandsByName),
    ...Object.keys(before.commandsByName),
  ]);
  const commandsByName: Record<string, number> = {};
  for (const name of names) {
    const count = (after.commandsByName[name] ?? 0) - (before.commandsByName[name] ?? 0);
    if (count !== 0) commandsByName[name] = count;
  }
  return {
    requests: after.requests - before.requests,
    bytesIn: after.bytesIn - before.bytesIn,
    bytesOut: after.bytesOut - before.bytesOut,
    commandsByName,
  };
}
