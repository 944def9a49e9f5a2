/**
 * HyperLogLog commands (PFADD, PFCOUNT, PFMERGE) with Redis's own sketch: MurmurHash64A picks one
 * of 16384 registers and the run length it records, and PFCOUNT uses the same estimator (Ertl's
 * improved raw estimate, as in Redis 7), so counts match Redis exactly. The value is a string that
 * starts with Redis's `HYLL` magic, followed by this engine's own marker byte and the non-zero
 * registers; HLL strings made by a real Redis (e.g. restored with SET) are not understood.
 */
import type { Reply } from "../../backend.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { fail } from "../errors.js";
import { R } from "../replies.js";
import { lookupTyped } from "./util.js";

const MAGIC = "HYLL\u00ee";
const NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const P = 14;
const REGISTERS = 1 << P;
const Q = 64 - P;
/** 0.5 / ln 2, the estimator's bias constant. */
const ALPHA_INF = 0.7213475204444817;
const M64 = 0xffffffffffffffffn;

/** Register index → run length (absent = 0). */
type Registers = Map<number, number>;

function murmurHash64A(data: string, seed: bigint): bigint {
  const m = 0xc6a4a7935bd1e995n;
  const len = data.length;
  let h = (seed ^ ((BigInt(len) * m) & M64)) & M64;
  const blocks = len - (len & 7);
  for (let i = 0; i < blocks; i += 8) {
    let k = 0n;
    for (let b = 7; b >= 0; b--) k = (k << 8n) | BigInt(data.charCodeAt(i + b));
    k = (k * m) & M64;
    k ^= k >> 47n;
    k = (k * m) & M64;
    h ^= k;
    h = (h * m) & M64;
  }
  const tail = len & 7;
  if (tail > 0) {
    for (let b = tail - 1; b >= 0; b--) h ^= BigInt(data.charCodeAt(blocks + b)) << BigInt(8 * b);
    h = (h * m) & M64;
  }
  h ^= h >> 47n;
  h = (h * m) & M64;
  h ^= h >> 47n;
  return h;
}

/** Which register an element lands in and the length of its `000..1` pattern (Redis hllPatLen). */
function patternOf(element: string): { index: number; count: number } {
  const hash = murmurHash64A(element, 0xadc83b19n);
  const index = Number(hash & BigInt(REGISTERS - 1));
  const rest = (hash >> BigInt(P)) | (1n << BigInt(Q));
  let count = 1;
  for (let bit = 1n; (rest & bit) === 0n; bit <<= 1n) count++;
  return { index, count };
}

function sigma(x: number): number {
  if (x === 1) return Number.POSITIVE_INFINITY;
  let y = 1;
  let z = x;
  let previous: number;
  do {
    x *= x;
    previous = z;
    z += x * y;
    y += y;
  } while (previous !== z);
  return z;
}

function tau(x: number): number {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  let previous: number;
  do {
    x = Math.sqrt(x);
    previous = z;
    y *= 0.5;
    z -= (1 - x) ** 2 * y;
  } while (previous !== z);
  return z / 3;
}

/** Redis's hllCount: the register histogram fed to Ertl's estimator. */
function estimate(registers: Registers): number {
  const histogram = new Array<number>(64).fill(0);
  histogram[0] = REGISTERS - registers.size;
  for (const count of registers.values()) histogram[count]!++;
  const m = REGISTERS;
  let z = m * tau((m - histogram[Q + 1]!) / m);
  for (let j = Q; j >= 1; j--) {
    z += histogram[j]!;
    z *= 0.5;
  }
  z += m * sigma(histogram[0]! / m);
  const raw = (ALPHA_INF * m * m) / z;
  return Math.sign(raw) * Math.round(Math.abs(raw));
}

/** The registers of the HLL at `key`, undefined if missing; WRONGTYPE for anything else. */
function readHll(ctx: CommandContext, key: string): Registers | undefined {
  const found = lookupTyped(ctx, key, "string");
  if (found === undefined) return undefined;
  if (!found.data.startsWith(MAGIC)) fail(NOT_HLL);
  return new Map(JSON.parse(found.data.slice(MAGIC.length)) as [number, number][]);
}

/** Writes the registers back in place, so an existing key keeps its TTL. */
function writeHll(ctx: CommandContext, key: string, registers: Registers): void {
  ctx.db.set(key, { type: "string", data: MAGIC + JSON.stringify([...registers]) }, true);
}

/** Raises registers to `count` where lower; returns whether any changed. */
function raise(registers: Registers, index: number, count: number): boolean {
  if ((registers.get(index) ?? 0) >= count) return false;
  registers.set(index, count);
  return true;
}

function pfadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const existing = readHll(ctx, key);
  const registers = existing ?? new Map<number, number>();
  let changed = existing === undefined;
  for (const element of argv.slice(2)) {
    const { index, count } = patternOf(element);
    if (raise(registers, index, count)) changed = true;
  }
  if (changed) writeHll(ctx, key, registers);
  return R.int(changed);
}

function mergeInto(target: Registers, ctx: CommandContext, keys: readonly string[]): Registers {
  for (const key of keys) {
    for (const [index, count] of readHll(ctx, key) ?? []) raise(target, index, count);
  }
  return target;
}

function pfcount(ctx: CommandContext, argv: readonly string[]): Reply {
  return R.int(estimate(mergeInto(new Map(), ctx, argv.slice(1))));
}

function pfmerge(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  writeHll(ctx, key, mergeInto(readHll(ctx, key) ?? new Map(), ctx, argv.slice(2)));
  return R.ok();
}

export const hyperLogLogCommands: readonly CommandSpec[] = [
  { name: "pfadd", arity: -2, write: true, handler: pfadd },
  { name: "pfcount", arity: -2, handler: pfcount },
  { name: "pfmerge", arity: -2, write: true, handler: pfmerge },
];
