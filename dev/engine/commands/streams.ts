/**
 * Stream commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD, XGROUP, XREADGROUP, XACK,
 * XPENDING, XCLAIM, XAUTOCLAIM, XINFO. Nothing blocks: XREAD/XREADGROUP with BLOCK answer at once.
 * Approximate trimming (`~`) removes whole 100-entry nodes like Redis, assuming small entries.
 */
import type { Reply } from "../../backend.js";
import { asciiLower, isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, wrongArity } from "../errors.js";
import { R } from "../replies.js";
import {
  type Consumer,
  type ConsumerGroup,
  compareIds,
  idText,
  MAX_ID,
  pendingInOrder,
  Stream,
  type StreamEntry,
  type StreamId,
  UINT64_MAX,
  ZERO_ID,
} from "../stream.js";
import { intArg, lookupTyped, smallIntArg } from "./util.js";

const INVALID_ID = "ERR Invalid stream ID specified as stream command argument";
const UINT64 = /^[0-9]+$/;

function getStream(ctx: CommandContext, key: string): Stream | undefined {
  return lookupTyped(ctx, key, "stream")?.data;
}

function uint64(text: string): bigint | null {
  if (!UINT64.test(text)) return null;
  const value = BigInt(text);
  return value > UINT64_MAX ? null : value;
}

/**
 * Redis's streamGenericParseIDOrReply: `ms-seq`, `ms` (seq = `missingSeq`), and unless strict
 * `-`/`+`. With `allowAutoSeq`, `ms-*` returns seq null.
 */
function parseId(
  text: string,
  missingSeq: bigint,
  strict: boolean,
  allowAutoSeq = false,
): { ms: bigint; seq: bigint | null } {
  if (text.length > 127) fail(INVALID_ID);
  if (!strict && text === "-") return ZERO_ID;
  if (!strict && text === "+") return MAX_ID;
  const dash = text.indexOf("-");
  const ms = uint64(dash < 0 ? text : text.slice(0, dash));
  if (ms === null) fail(INVALID_ID);
  if (dash < 0) return { ms, seq: missingSeq };
  const seqText = text.slice(dash + 1);
  if (allowAutoSeq && seqText === "*") return { ms, seq: null };
  const seq = uint64(seqText);
  if (seq === null) fail(INVALID_ID);
  return { ms, seq };
}

function strictId(text: string, missingSeq = 0n): StreamId {
  return parseId(text, missingSeq, true) as StreamId;
}

function nextId(id: StreamId): StreamId | null {
  if (id.seq < UINT64_MAX) return { ms: id.ms, seq: id.seq + 1n };
  return id.ms < UINT64_MAX ? { ms: id.ms + 1n, seq: 0n } : null;
}

function previousId(id: StreamId): StreamId | null {
  if (id.seq > 0n) return { ms: id.ms, seq: id.seq - 1n };
  return id.ms > 0n ? { ms: id.ms - 1n, seq: UINT64_MAX } : null;
}

/** An interval bound: `(` makes it exclusive (6.2+); a missing seq is 0 for starts, max for ends. */
function intervalBound(text: string, isStart: boolean): StreamId {
  if (text.startsWith("(") && text.length > 1) {
    const id = strictId(text.slice(1), isStart ? 0n : UINT64_MAX);
    const moved = isStart ? nextId(id) : previousId(id);
    if (moved === null) fail(`ERR invalid ${isStart ? "start" : "end"} ID for the interval`);
    return moved;
  }
  return parseId(text, isStart ? 0n : UINT64_MAX, false) as StreamId;
}

function entryReply(entry: StreamEntry | undefined, id?: StreamId): Reply {
  if (entry === undefined) return R.array([R.bulk(idText(id!)), R.nilArray()]);
  return R.array([R.bulk(idText(entry.id)), R.bulks(entry.fields)]);
}

function noGroup(key: string, group: string, suffix = ""): never {
  return fail(`NOGROUP No such key '${key}' or consumer group '${group}'${suffix}`);
}

// ---- trimming -------------------------------------------------------------------------------

interface TrimSpec {
  readonly strategy: "maxlen" | "minid";
  readonly maxlen: number;
  readonly minid: StreamId;
  readonly approx: boolean;
  /** Most entries an approximate trim may remove (0 = no limit). */
  readonly limit: number;
}

/** Removes entries per `spec`; returns how many went. Approximate trims drop whole nodes only. */
function trim(stream: Stream, spec: TrimSpec): number {
  const entries = stream.entries;
  const overBound = (entry: StreamEntry, remaining: number): boolean =>
    spec.strategy === "maxlen" ? remaining > spec.maxlen : compareIds(entry.id, spec.minid) < 0;
  let removed = 0;
  if (!spec.approx) {
    while (removed < entries.length && overBound(entries[removed]!, entries.length - removed)) {
      removed++;
    }
  } else {
    while (removed < entries.length) {
      const node = entries[removed]!.node;
      let end = removed;
      while (end < entries.length && entries[end]!.node === node) end++;
      const nodeSize = end - removed;
      const fits =
        spec.strategy === "maxlen"
          ? entries.length - end >= spec.maxlen
          : compareIds(entries[end - 1]!.id, spec.minid) < 0;
      if (!fits || (spec.limit > 0 && removed + nodeSize > spec.limit)) break;
      removed = end;
    }
  }
  entries.splice(0, removed);
  return removed;
}

/** Redis's streamParseAddOrTrimArgsOrReply; returns the trim spec and where parsing stopped. */
function parseTrimArgs(
  argv: readonly string[],
  xadd: boolean,
): { trim: TrimSpec | undefined; at: number; noMkStream: boolean } {
  let strategy: "maxlen" | "minid" | undefined;
  let maxlen = 0;
  let minid = ZERO_ID;
  let approx = false;
  let limit = 0;
  let limitGiven = false;
  let noMkStream = false;
  let i = 2;
  for (; i < argv.length; i++) {
    const more = argv.length - 1 - i;
    const opt = asciiLower(argv[i]!);
    if (xadd && argv[i] === "*") break;
    if ((opt === "maxlen" || opt === "minid") && more > 0) {
      if (strategy !== undefined) {
        fail("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
      }
      approx = false;
      const next = argv[i + 1];
      if (more >= 2 && next === "~") {
        approx = true;
        i++;
      } else if (more >= 2 && next === "=") i++;
      if (opt === "maxlen") {
        maxlen = smallIntArg(argv[i + 1]);
        if (maxlen < 0) fail("ERR The MAXLEN argument must be >= 0.");
      } else {
        minid = strictId(argv[i + 1]!);
      }
      i++;
      strategy = opt;
    } else if (opt === "limit" && more > 0) {
      limit = smallIntArg(argv[++i]);
      if (limit < 0) fail("ERR The LIMIT argument must be >= 0.");
      limitGiven = true;
    } else if (xadd && opt === "nomkstream") {
      noMkStream = true;
    } else if (xadd) {
      break;
    } else {
      fail(Errors.syntax);
    }
  }
  if (limit > 0 && strategy === undefined) {
    fail("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
  }
  if (!xadd && strategy === undefined) {
    fail("ERR syntax error, XTRIM must be called with a trimming strategy");
  }
  if (limitGiven && !approx) {
    fail("ERR syntax error, LIMIT cannot be used without the special ~ option");
  }
  if (!limitGiven) limit = approx ? 10_000 : 0;
  const spec = strategy === undefined ? undefined : { strategy, maxlen, minid, approx, limit };
  return { trim: spec, at: i, noMkStream };
}

// ---- XADD, XRANGE, XLEN, XDEL, XTRIM --------------------------------------------------------

function xadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const { trim: trimSpec, at, noMkStream } = parseTrimArgs(argv, true);
  const idArg = argv[at];
  const explicit = idArg !== undefined && idArg !== "*" ? parseId(idArg, 0n, true, true) : null;
  const fieldsAt = at + 1;
  if (fieldsAt >= argv.length || (argv.length - fieldsAt) % 2 === 1) fail(wrongArity("xadd"));
  if (explicit !== null && explicit.seq === 0n && explicit.ms === 0n) {
    fail("ERR The ID specified in XADD must be greater than 0-0");
  }
  const key = argv[1]!;
  let stream = getStream(ctx, key);
  if (stream === undefined) {
    if (noMkStream) return R.nil();
    stream = new Stream();
    ctx.db.set(key, { type: "stream", data: stream });
  }
  const last = stream.lastId;
  if (last.ms === UINT64_MAX && last.seq === UINT64_MAX) {
    fail("ERR The stream has exhausted the last possible ID, unable to add more items");
  }
  let id: StreamId;
  if (explicit === null) {
    const now = BigInt(ctx.now());
    id = now > last.ms ? { ms: now, seq: 0n } : nextId(last)!;
  } else if (explicit.seq === null) {
    if (explicit.ms === last.ms && last.seq === UINT64_MAX) id = { ms: 0n, seq: 0n };
    else
      id =
        explicit.ms === last.ms
          ? { ms: last.ms, seq: last.seq + 1n }
          : { ms: explicit.ms, seq: 0n };
  } else {
    id = explicit as StreamId;
  }
  if (compareIds(id, last) <= 0) {
    fail("ERR The ID specified in XADD is equal or smaller than the target stream top item");
  }
  stream.append(id, argv.slice(fieldsAt));
  if (trimSpec !== undefined) trim(stream, trimSpec);
  return R.bulk(idText(id));
}

function xrangeCommand(reverse: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const start = intervalBound(argv[reverse ? 3 : 2]!, true);
    const end = intervalBound(argv[reverse ? 2 : 3]!, false);
    let count = -1;
    for (let j = 4; j < argv.length; j++) {
      if (isKeyword(argv[j], "count") && j + 1 < argv.length) {
        count = Math.max(0, smallIntArg(argv[++j]));
      } else fail(Errors.syntax);
    }
    const stream = getStream(ctx, argv[1]!);
    if (stream === undefined) return R.array([]);
    if (count === 0) return R.nilArray();
    let entries = stream.range(start, end);
    if (reverse) entries = entries.reverse();
    if (count > 0) entries = entries.slice(0, count);
    return R.array(entries.map((entry) => entryReply(entry)));
  };
}

function xdel(ctx: CommandContext, argv: readonly string[]): Reply {
  const ids = argv.slice(2).map((text) => strictId(text));
  const stream = getStream(ctx, argv[1]!);
  if (stream === undefined) return R.int(0);
  return R.int(ids.filter((id) => stream.delete(id)).length);
}

function xtrim(ctx: CommandContext, argv: readonly string[]): Reply {
  const { trim: spec, at } = parseTrimArgs(argv, false);
  if (at < argv.length) fail(Errors.syntax);
  const stream = getStream(ctx, argv[1]!);
  return R.int(stream === undefined || spec === undefined ? 0 : trim(stream, spec));
}

// ---- consumer groups ------------------------------------------------------------------------

function consumerOf(ctx: CommandContext, group: ConsumerGroup, name: string): Consumer {
  let consumer = group.consumers.get(name);
  if (consumer === undefined) {
    consumer = { name, seenAt: ctx.now(), pending: new Set() };
    group.consumers.set(name, consumer);
  }
  consumer.seenAt = ctx.now();
  return consumer;
}

function xgroup(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  const syntaxError = (): never =>
    fail(
      `ERR unknown subcommand or wrong number of arguments for '${argv[1]!.slice(0, 128)}'. Try XGROUP HELP.`,
    );
  if (sub === "help") {
    return R.array(
      [
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "DELCONSUMER <key> <groupname> <consumer>",
        "DESTROY <key> <groupname>",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "HELP",
      ].map((line) => R.status(line)),
    );
  }
  const key = argv[2]!;
  const name = argv[3]!;
  let mkStream = false;
  let entriesRead: number | null = null;
  if ((sub === "create" || sub === "setid") && argv.length >= 5) {
    for (let i = 5; i < argv.length; i++) {
      if (sub === "create" && isKeyword(argv[i], "mkstream")) mkStream = true;
      else if (isKeyword(argv[i], "entriesread") && i + 1 < argv.length) {
        const value = smallIntArg(argv[++i]);
        if (value < -1) fail("ERR value for ENTRIESREAD must be positive or -1");
        entriesRead = value === -1 ? null : value;
      } else syntaxError();
    }
  }
  let stream = getStream(ctx, key);
  if (!mkStream) {
    if (stream === undefined) {
      fail(
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
      );
    }
    if (
      !stream.groups.has(name) &&
      (sub === "setid" || sub === "createconsumer" || sub === "delconsumer")
    ) {
      fail(`NOGROUP No such consumer group '${name}' for key name '${key}'`);
    }
  }
  const group = stream?.groups.get(name);
  if (sub === "create" && argv.length <= 8) {
    const id = argv[4] === "$" ? (stream?.lastId ?? ZERO_ID) : strictId(argv[4]!);
    if (stream === undefined) {
      stream = new Stream();
      ctx.db.set(key, { type: "stream", data: stream });
    }
    if (stream.groups.has(name)) fail("BUSYGROUP Consumer Group name already exists");
    stream.groups.set(name, { lastId: id, entriesRead, pending: new Map(), consumers: new Map() });
    return R.ok();
  }
  if (sub === "setid" && (argv.length === 5 || argv.length === 7)) {
    const id = argv[4] === "$" ? stream!.lastId : (parseId(argv[4]!, 0n, false) as StreamId);
    group!.lastId = id;
    group!.entriesRead = entriesRead;
    return R.ok();
  }
  if (sub === "destroy" && argv.length === 4) return R.int(stream!.groups.delete(name));
  if (sub === "createconsumer" && argv.length === 5) {
    if (group!.consumers.has(argv[4]!)) return R.int(0);
    consumerOf(ctx, group!, argv[4]!);
    return R.int(1);
  }
  if (sub === "delconsumer" && argv.length === 5) {
    const consumer = group!.consumers.get(argv[4]!);
    if (consumer === undefined) return R.int(0);
    for (const id of consumer.pending) group!.pending.delete(id);
    group!.consumers.delete(argv[4]!);
    return R.int(consumer.pending.size);
  }
  return syntaxError();
}

/** XREAD and XREADGROUP (never blocking). */
function xreadCommand(withGroup: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    let count = 0;
    let streamsAt = 0;
    let groupName: string | undefined;
    let consumerName = "";
    let noAck = false;
    for (let i = 1; i < argv.length; i++) {
      const more = argv.length - i - 1;
      const opt = asciiLower(argv[i]!);
      if (opt === "block" && more > 0) {
        const timeout = intArg(argv[++i], "ERR timeout is not an integer or out of range");
        if (timeout < 0n) fail("ERR timeout is negative");
      } else if (opt === "count" && more > 0) {
        count = Math.max(0, smallIntArg(argv[++i]));
      } else if (opt === "streams" && more > 0) {
        streamsAt = i + 1;
        if ((argv.length - streamsAt) % 2 !== 0) {
          // Redis 7.0 names XREAD and `$` here even for XREADGROUP.
          fail(
            "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
          );
        }
        break;
      } else if (opt === "group" && more >= 2) {
        if (!withGroup) {
          fail("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
        }
        groupName = argv[i + 1]!;
        consumerName = argv[i + 2]!;
        i += 2;
      } else if (opt === "noack") {
        if (!withGroup) {
          fail("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
        }
        noAck = true;
      } else fail(Errors.syntax);
    }
    if (streamsAt === 0) fail(Errors.syntax);
    if (withGroup && groupName === undefined) fail("ERR Missing GROUP option for XREADGROUP");
    const keyCount = (argv.length - streamsAt) / 2;
    const targets: {
      key: string;
      stream?: Stream;
      group?: ConsumerGroup;
      after: StreamId | ">";
    }[] = [];
    for (let i = 0; i < keyCount; i++) {
      const key = argv[streamsAt + i]!;
      const idArg = argv[streamsAt + keyCount + i]!;
      const stream = getStream(ctx, key);
      let group: ConsumerGroup | undefined;
      if (groupName !== undefined) {
        group = stream?.groups.get(groupName);
        if (group === undefined) noGroup(key, groupName, " in XREADGROUP with GROUP option");
      }
      if (idArg === "$") {
        if (withGroup) {
          fail(
            "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
          );
        }
        targets.push({ key, stream, after: stream?.lastId ?? ZERO_ID });
      } else if (idArg === ">") {
        if (!withGroup) {
          fail(
            "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
          );
        }
        targets.push({ key, stream, group, after: ">" });
      } else {
        targets.push({ key, stream, group, after: strictId(idArg) });
      }
    }
    const served: Reply[] = [];
    for (const { key, stream, group, after } of targets) {
      if (stream === undefined) continue;
      if (group !== undefined) {
        const consumer = consumerOf(ctx, group, consumerName);
        if (after !== ">") {
          served.push(R.array([R.bulk(key), historyOf(stream, group, consumer, after, count)]));
          continue;
        }
        const fresh = stream.range(nextId(group.lastId) ?? MAX_ID, MAX_ID);
        if (fresh.length === 0 || compareIds(group.lastId, MAX_ID) === 0) continue;
        const delivered = count > 0 ? fresh.slice(0, count) : fresh;
        for (const entry of delivered) deliver(ctx, stream, group, consumer, entry.id, noAck);
        served.push(R.array([R.bulk(key), R.array(delivered.map((e) => entryReply(e)))]));
      } else {
        const start = nextId(after as StreamId);
        const fresh = start === null ? [] : stream.range(start, MAX_ID);
        if (fresh.length === 0) continue;
        const delivered = count > 0 ? fresh.slice(0, count) : fresh;
        served.push(R.array([R.bulk(key), R.array(delivered.map((e) => entryReply(e)))]));
      }
    }
    return served.length === 0 ? R.nilArray() : R.array(served);
  };
}

/** Records a new delivery of `id` to `consumer` (XREADGROUP `>`). */
function deliver(
  ctx: CommandContext,
  stream: Stream,
  group: ConsumerGroup,
  consumer: Consumer,
  id: StreamId,
  noAck: boolean,
): void {
  stream.markDelivered(group, id);
  if (noAck) return;
  const key = idText(id);
  const existing = group.pending.get(key);
  if (existing !== undefined) group.consumers.get(existing.consumer)?.pending.delete(key);
  group.pending.set(key, { id, consumer: consumer.name, deliveredAt: ctx.now(), deliveries: 1 });
  consumer.pending.add(key);
}

/** XREADGROUP with an explicit ID: the consumer's own pending entries after `after`. */
function historyOf(
  stream: Stream,
  group: ConsumerGroup,
  consumer: Consumer,
  after: StreamId,
  count: number,
): Reply {
  const start = nextId(after);
  const mine = pendingInOrder(group).filter(
    (p) => p.consumer === consumer.name && start !== null && compareIds(p.id, start) >= 0,
  );
  const picked = count > 0 ? mine.slice(0, count) : mine;
  return R.array(picked.map((p) => entryReply(stream.find(p.id), p.id)));
}

function groupOf(ctx: CommandContext, key: string, name: string): ConsumerGroup {
  const group = getStream(ctx, key)?.groups.get(name);
  if (group === undefined) noGroup(key, name);
  return group;
}

function release(group: ConsumerGroup, key: string): boolean {
  const pending = group.pending.get(key);
  if (pending === undefined) return false;
  group.pending.delete(key);
  group.consumers.get(pending.consumer)?.pending.delete(key);
  return true;
}

function xack(ctx: CommandContext, argv: readonly string[]): Reply {
  const stream = getStream(ctx, argv[1]!);
  const group = stream?.groups.get(argv[2]!);
  const ids = argv.slice(3).map((text) => strictId(text));
  if (group === undefined) return R.int(0);
  return R.int(ids.filter((id) => release(group, idText(id))).length);
}

function xpending(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length !== 3 && (argv.length < 6 || argv.length > 9)) fail(Errors.syntax);
  let minIdle = 0;
  let start = ZERO_ID;
  let end = MAX_ID;
  let count = 0;
  let consumerName: string | undefined;
  if (argv.length >= 6) {
    let at = 3;
    if (isKeyword(argv[3], "idle")) {
      minIdle = smallIntArg(argv[4]);
      if (argv.length < 8) fail(Errors.syntax);
      at += 2;
    }
    count = Math.max(0, smallIntArg(argv[at + 2]));
    start = intervalBound(argv[at]!, true);
    end = intervalBound(argv[at + 1]!, false);
    consumerName = argv[at + 3];
  }
  const key = argv[1]!;
  const group = groupOf(ctx, key, argv[2]!);
  const pending = pendingInOrder(group);
  if (argv.length === 3) {
    if (pending.length === 0) return R.array([R.int(0), R.nil(), R.nil(), R.nilArray()]);
    const owners = [...group.consumers.values()]
      .filter((c) => c.pending.size > 0)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return R.array([
      R.int(pending.length),
      R.bulk(idText(pending[0]!.id)),
      R.bulk(idText(pending[pending.length - 1]!.id)),
      R.array(owners.map((c) => R.bulks([c.name, String(c.pending.size)]))),
    ]);
  }
  if (consumerName !== undefined && !group.consumers.has(consumerName)) return R.array([]);
  const now = ctx.now();
  const rows: Reply[] = [];
  for (const p of pending) {
    if (rows.length >= count) break;
    if (compareIds(p.id, start) < 0 || compareIds(p.id, end) > 0) continue;
    if (consumerName !== undefined && p.consumer !== consumerName) continue;
    const idle = Math.max(0, now - p.deliveredAt);
    if (idle < minIdle) continue;
    rows.push(
      R.array([R.bulk(idText(p.id)), R.bulk(p.consumer), R.int(idle), R.int(p.deliveries)]),
    );
  }
  return R.array(rows);
}

/** Moves a pending entry to `consumer` with a new delivery time (XCLAIM / XAUTOCLAIM). */
function claimFor(
  group: ConsumerGroup,
  consumer: Consumer,
  key: string,
  deliveredAt: number,
  deliveries: (previous: number) => number,
): void {
  const pending = group.pending.get(key)!;
  if (pending.consumer !== consumer.name) {
    group.consumers.get(pending.consumer)?.pending.delete(key);
    pending.consumer = consumer.name;
    consumer.pending.add(key);
  }
  pending.deliveredAt = deliveredAt;
  pending.deliveries = deliveries(pending.deliveries);
}

function xclaim(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const stream = getStream(ctx, key);
  const group = groupOf(ctx, key, argv[2]!);
  const minIdle = Math.max(
    0,
    smallIntArg(argv[4], "ERR Invalid min-idle-time argument for XCLAIM"),
  );
  const ids: StreamId[] = [];
  let j = 5;
  for (; j < argv.length; j++) {
    const parsed = tryStrictId(argv[j]!);
    if (parsed === null) break;
    ids.push(parsed);
  }
  const now = ctx.now();
  let force = false;
  let justId = false;
  let deliveredAt = -1;
  let retryCount = -1;
  let lastId: StreamId | undefined;
  for (; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    const more = argv.length - 1 - j;
    if (opt === "force") force = true;
    else if (opt === "justid") justId = true;
    else if (opt === "idle" && more > 0) {
      deliveredAt = now - smallIntArg(argv[++j], "ERR Invalid IDLE option argument for XCLAIM");
    } else if (opt === "time" && more > 0) {
      deliveredAt = smallIntArg(argv[++j], "ERR Invalid TIME option argument for XCLAIM");
    } else if (opt === "retrycount" && more > 0) {
      retryCount = smallIntArg(argv[++j], "ERR Invalid RETRYCOUNT option argument for XCLAIM");
    } else if (opt === "lastid" && more > 0) {
      lastId = strictId(argv[++j]!);
    } else fail(`ERR Unrecognized XCLAIM option '${argv[j]}'`);
  }
  if (deliveredAt < 0 || deliveredAt > now) deliveredAt = now;
  if (lastId !== undefined && compareIds(lastId, group.lastId) > 0) group.lastId = lastId;
  let consumer: Consumer | undefined;
  const replies: Reply[] = [];
  for (const id of ids) {
    const idKey = idText(id);
    const entry = stream!.find(id);
    if (entry === undefined) {
      release(group, idKey);
      continue;
    }
    let pending = group.pending.get(idKey);
    const forced = force && pending === undefined;
    if (forced) {
      pending = { id, consumer: "", deliveredAt: now, deliveries: 0 };
      group.pending.set(idKey, pending);
    }
    if (pending === undefined) continue;
    if (!forced && minIdle > 0 && now - pending.deliveredAt < minIdle) continue;
    consumer ??= consumerOf(ctx, group, argv[3]!);
    claimFor(group, consumer, idKey, deliveredAt, (previous) =>
      retryCount >= 0 ? retryCount : justId ? previous : previous + 1,
    );
    replies.push(justId ? R.bulk(idKey) : entryReply(entry));
  }
  return R.array(replies);
}

function tryStrictId(text: string): StreamId | null {
  try {
    return strictId(text);
  } catch {
    return null;
  }
}

function xautoclaim(ctx: CommandContext, argv: readonly string[]): Reply {
  const minIdle = Math.max(
    0,
    smallIntArg(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM"),
  );
  const start = intervalBound(argv[5]!, true);
  let count = 100;
  let justId = false;
  for (let j = 6; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    if (opt === "count" && j + 1 < argv.length) {
      count = smallIntArg(argv[++j], "ERR COUNT must be > 0");
      if (count < 1 || count > Number.MAX_SAFE_INTEGER / 10) fail("ERR COUNT must be > 0");
    } else if (opt === "justid") justId = true;
    else fail(Errors.syntax);
  }
  const key = argv[1]!;
  const stream = getStream(ctx, key);
  const group = groupOf(ctx, key, argv[2]!);
  const now = ctx.now();
  const candidates = pendingInOrder(group).filter((p) => compareIds(p.id, start) >= 0);
  let attempts = count * 10;
  let at = 0;
  const claimed: Reply[] = [];
  const deleted: string[] = [];
  let consumer: Consumer | undefined;
  for (; attempts > 0 && count > 0 && at < candidates.length; attempts--, at++) {
    const pending = candidates[at]!;
    const idKey = idText(pending.id);
    const entry = stream!.find(pending.id);
    if (entry === undefined) {
      release(group, idKey);
      deleted.push(idKey);
      count--;
      continue;
    }
    if (minIdle > 0 && now - pending.deliveredAt < minIdle) continue;
    consumer ??= consumerOf(ctx, group, argv[3]!);
    claimFor(group, consumer, idKey, now, (previous) => (justId ? previous : previous + 1));
    claimed.push(justId ? R.bulk(idKey) : entryReply(entry));
    count--;
  }
  const next = candidates[at];
  return R.array([
    R.bulk(next === undefined ? "0-0" : idText(next.id)),
    R.array(claimed),
    R.bulks(deleted),
  ]);
}

// ---- XINFO ------------------------------------------------------------------------------------

function xinfo(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  if (sub === "help") {
    return R.array(
      [
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "GROUPS <key>",
        "STREAM <key> [FULL [COUNT <count>]]",
        "HELP",
      ].map((line) => R.status(line)),
    );
  }
  const key = argv[2]!;
  const stream = getStream(ctx, key);
  if (stream === undefined) fail(Errors.noSuchKey);
  if (sub === "consumers") {
    const group = stream.groups.get(argv[3]!);
    if (group === undefined)
      fail(`NOGROUP No such consumer group '${argv[3]}' for key name '${key}'`);
    const now = ctx.now();
    return R.array(
      [...group.consumers.values()]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((c) =>
          R.array([
            R.bulk("name"),
            R.bulk(c.name),
            R.bulk("pending"),
            R.int(c.pending.size),
            R.bulk("idle"),
            R.int(Math.max(0, now - c.seenAt)),
          ]),
        ),
    );
  }
  if (sub === "groups") {
    return R.array(
      [...stream.groups.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, group]) => {
          const lag = stream.lag(group);
          return R.array([
            R.bulk("name"),
            R.bulk(name),
            R.bulk("consumers"),
            R.int(group.consumers.size),
            R.bulk("pending"),
            R.int(group.pending.size),
            R.bulk("last-delivered-id"),
            R.bulk(idText(group.lastId)),
            R.bulk("entries-read"),
            group.entriesRead === null ? R.nil() : R.int(group.entriesRead),
            R.bulk("lag"),
            lag === null ? R.nil() : R.int(lag),
          ]);
        }),
    );
  }
  if (argv.length > 3) fail(Errors.syntax);
  // The radix-tree figures describe Redis's memory layout; these are plausible stand-ins.
  const nodes = new Set(stream.entries.map((e) => e.node)).size;
  const first = stream.entries[0];
  const last = stream.entries[stream.entries.length - 1];
  return R.array([
    R.bulk("length"),
    R.int(stream.length),
    R.bulk("radix-tree-keys"),
    R.int(nodes),
    R.bulk("radix-tree-nodes"),
    R.int(nodes + 1),
    R.bulk("last-generated-id"),
    R.bulk(idText(stream.lastId)),
    R.bulk("max-deleted-entry-id"),
    R.bulk(idText(stream.maxDeletedId)),
    R.bulk("entries-added"),
    R.int(stream.entriesAdded),
    R.bulk("recorded-first-entry-id"),
    R.bulk(idText(first?.id ?? ZERO_ID)),
    R.bulk("groups"),
    R.int(stream.groups.size),
    R.bulk("first-entry"),
    first === undefined ? R.nil() : entryReply(first),
    R.bulk("last-entry"),
    last === undefined ? R.nil() : entryReply(last),
  ]);
}

export const streamCommands: readonly CommandSpec[] = [
  { name: "xadd", arity: -5, write: true, handler: xadd },
  { name: "xrange", arity: -4, handler: xrangeCommand(false) },
  { name: "xrevrange", arity: -4, handler: xrangeCommand(true) },
  { name: "xlen", arity: 2, handler: (ctx, argv) => R.int(getStream(ctx, argv[1]!)?.length ?? 0) },
  { name: "xdel", arity: -3, write: true, handler: xdel },
  { name: "xtrim", arity: -4, write: true, handler: xtrim },
  { name: "xread", arity: -4, handler: xreadCommand(false) },
  { name: "xreadgroup", arity: -7, write: true, handler: xreadCommand(true) },
  {
    name: "xgroup",
    arity: -2,
    write: true,
    subcommands: { create: -5, setid: -5, destroy: 4, createconsumer: 5, delconsumer: 5, help: 2 },
    handler: xgroup,
  },
  { name: "xack", arity: -4, write: true, handler: xack },
  { name: "xpending", arity: -3, handler: xpending },
  { name: "xclaim", arity: -6, write: true, handler: xclaim },
  { name: "xautoclaim", arity: -6, write: true, handler: xautoclaim },
  {
    name: "xinfo",
    arity: -2,
    subcommands: { consumers: 4, groups: 3, stream: -3, help: 2 },
    handler: xinfo,
  },
];
