/**
 * Geo commands over sorted sets, with Redis's 52-bit interleaved geohash scores, its haversine
 * distance (earth radius 6372797.560856 m) and its reply formats. GEOSEARCH tests every member
 * against the shape instead of walking geohash boxes: the same members match, but results without
 * ASC/DESC come in score order and COUNT ANY may pick different members than Redis would.
 */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { R } from "../replies.js";
import type { ZEntry } from "../zset.js";
import { floatArg, intArg } from "./util.js";
import { getZSet, storeZSet, withScores, zadd } from "./zsets.js";

const LON_MIN = -180;
const LON_MAX = 180;
const LAT_MIN = -85.05112878;
const LAT_MAX = 85.05112878;
const STEP = 26;
const EARTH_RADIUS_M = 6372797.560856;
const GEO_ALPHABET = "0123456789bcdefghjkmnpqrstuvwxyz";
const UNITS: Readonly<Record<string, number>> = { m: 1, km: 1000, ft: 0.3048, mi: 1609.34 };

interface Point {
  readonly lon: number;
  readonly lat: number;
}

/** Spreads the low 26 bits of `value` onto the even bit positions. */
function spread(value: number): bigint {
  let out = 0n;
  for (let i = 0; i < STEP; i++) if ((value >>> i) & 1) out |= 1n << BigInt(2 * i);
  return out;
}

function squash(bits: bigint): number {
  let out = 0;
  for (let i = 0; i < STEP; i++) if ((bits >> BigInt(2 * i)) & 1n) out |= 1 << i;
  return out >>> 0;
}

/** Redis's geohashEncode: latitude bits on even positions, longitude bits on odd ones. */
function encode(point: Point, latMin = LAT_MIN, latMax = LAT_MAX): bigint {
  const latOffset = Math.floor(((point.lat - latMin) / (latMax - latMin)) * 2 ** STEP);
  const lonOffset = Math.floor(((point.lon - LON_MIN) / (LON_MAX - LON_MIN)) * 2 ** STEP);
  return spread(latOffset) | (spread(lonOffset) << 1n);
}

/** The centre of the geohash cell a score names, clamped to the valid range (geohashDecode). */
function decode(score: number): Point {
  const bits = BigInt(score);
  const lat = squash(bits);
  const lon = squash(bits >> 1n);
  const cell = 2 ** STEP;
  const latLow = LAT_MIN + (lat / cell) * (LAT_MAX - LAT_MIN);
  const latHigh = LAT_MIN + ((lat + 1) / cell) * (LAT_MAX - LAT_MIN);
  const lonLow = LON_MIN + (lon / cell) * (LON_MAX - LON_MIN);
  const lonHigh = LON_MIN + ((lon + 1) / cell) * (LON_MAX - LON_MIN);
  return {
    lon: Math.min(LON_MAX, Math.max(LON_MIN, (lonLow + lonHigh) / 2)),
    lat: Math.min(LAT_MAX, Math.max(LAT_MIN, (latLow + latHigh) / 2)),
  };
}

const radians = (degrees: number): number => degrees * (Math.PI / 180);

function latDistance(lat1: number, lat2: number): number {
  return EARTH_RADIUS_M * Math.abs(radians(lat2) - radians(lat1));
}

/** Redis's geohashGetDistance (haversine). */
function distance(a: Point, b: Point): number {
  const v = Math.sin((radians(b.lon) - radians(a.lon)) / 2);
  if (v === 0) return latDistance(a.lat, b.lat);
  const u = Math.sin((radians(b.lat) - radians(a.lat)) / 2);
  const h = u * u + Math.cos(radians(a.lat)) * Math.cos(radians(b.lat)) * v * v;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.sqrt(h));
}

/** `%.4f`, as Redis prints distances. */
const formatDistance = (meters: number): string => meters.toFixed(4);

/** Redis's human long double format: `%.17Lf` with trailing zeros (and dot) removed. */
function formatCoordinate(value: number): string {
  const fixed = value.toFixed(17);
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

function pointArgs(lonText: string | undefined, latText: string | undefined): Point {
  const lon = floatArg(lonText);
  const lat = floatArg(latText);
  if (lon < LON_MIN || lon > LON_MAX || lat < LAT_MIN || lat > LAT_MAX) {
    fail(`ERR invalid longitude,latitude pair ${lon.toFixed(6)},${lat.toFixed(6)}`);
  }
  return { lon, lat };
}

function unitArg(text: string): number {
  const meters = UNITS[asciiLower(text)];
  if (meters === undefined) fail("ERR unsupported unit provided. please use M, KM, FT, MI");
  return meters;
}

function geoadd(ctx: CommandContext, argv: readonly string[]): Reply {
  let at = 2;
  const options: string[] = [];
  for (; at < argv.length; at++) {
    const opt = asciiLower(argv[at]!);
    if (opt !== "nx" && opt !== "xx" && opt !== "ch") break;
    options.push(opt);
  }
  if ((argv.length - at) % 3 !== 0 || (options.includes("nx") && options.includes("xx"))) {
    fail(Errors.syntax);
  }
  const pairs: string[] = [];
  for (let i = at; i < argv.length; i += 3) {
    pairs.push(String(encode(pointArgs(argv[i], argv[i + 1]))), argv[i + 2]!);
  }
  return zadd(ctx, ["zadd", argv[1]!, ...options, ...pairs]);
}

function geopos(ctx: CommandContext, argv: readonly string[]): Reply {
  const zset = getZSet(ctx, argv[1]!);
  return R.array(
    argv.slice(2).map((member) => {
      const score = zset?.score(member);
      if (score === undefined) return R.nilArray();
      const { lon, lat } = decode(score);
      return R.bulks([formatCoordinate(lon), formatCoordinate(lat)]);
    }),
  );
}

function geohash(ctx: CommandContext, argv: readonly string[]): Reply {
  const zset = getZSet(ctx, argv[1]!);
  return R.bulks(
    argv.slice(2).map((member) => {
      const score = zset?.score(member);
      if (score === undefined) return null;
      // Standard geohashes use latitudes -90..90, so the position is re-encoded for output.
      const bits = encode(decode(score), -90, 90);
      let out = "";
      for (let i = 0; i < 11; i++) {
        const index = i === 10 ? 0 : Number((bits >> BigInt(52 - (i + 1) * 5)) & 0x1fn);
        out += GEO_ALPHABET[index];
      }
      return out;
    }),
  );
}

function geodist(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length > 5) fail(Errors.syntax);
  const toMeters = argv.length === 5 ? unitArg(argv[4]!) : 1;
  const zset = getZSet(ctx, argv[1]!);
  const a = zset?.score(argv[2]!);
  const b = zset?.score(argv[3]!);
  if (a === undefined || b === undefined) return R.nil();
  return R.bulk(formatDistance(distance(decode(a), decode(b)) / toMeters));
}

type Shape =
  | { readonly kind: "radius"; readonly radius: number; readonly toMeters: number }
  | {
      readonly kind: "box";
      readonly width: number;
      readonly height: number;
      readonly toMeters: number;
    };

interface Match {
  readonly entry: ZEntry;
  readonly point: Point;
  readonly meters: number;
}

/** Redis's geoWithinShape: the distance from the centre when `point` is inside, else undefined. */
function within(shape: Shape, centre: Point, point: Point): number | undefined {
  if (shape.kind === "radius") {
    const meters = distance(centre, point);
    return meters > shape.radius * shape.toMeters ? undefined : meters;
  }
  if (latDistance(point.lat, centre.lat) > (shape.height * shape.toMeters) / 2) return undefined;
  const lonMeters = distance(
    { lon: point.lon, lat: point.lat },
    { lon: centre.lon, lat: point.lat },
  );
  if (lonMeters > (shape.width * shape.toMeters) / 2) return undefined;
  return distance(centre, point);
}

/** GEOSEARCH and GEOSEARCHSTORE, with Redis's option parsing and checks in Redis's order. */
function geosearchCommand(store: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const sourceAt = store ? 2 : 1;
    const zset = getZSet(ctx, argv[sourceAt]!);
    let fromMember: string | undefined;
    let fromPoint: Point | undefined;
    let shape: Shape | undefined;
    let sort: "asc" | "desc" | undefined;
    let count = 0;
    let any = false;
    let withDist = false;
    let withHash = false;
    let withCoord = false;
    let storeDist = false;
    const base = sourceAt + 1;
    for (let i = base; i < argv.length; i++) {
      const opt = asciiLower(argv[i]!);
      const left = argv.length - i - 1;
      if (opt === "withdist") withDist = true;
      else if (opt === "withhash") withHash = true;
      else if (opt === "withcoord") withCoord = true;
      else if (opt === "any") any = true;
      else if (opt === "asc" || opt === "desc") sort = opt;
      else if (opt === "count" && left >= 1) {
        const value = intArg(argv[++i]);
        if (value <= 0n) fail("ERR COUNT must be > 0");
        count = Number(value);
      } else if (store && opt === "storedist") storeDist = true;
      else if (opt === "frommember" && left >= 1 && fromPoint === undefined) {
        fromMember = argv[++i]!;
      } else if (opt === "fromlonlat" && left >= 2 && fromMember === undefined) {
        fromPoint = pointArgs(argv[i + 1], argv[i + 2]);
        i += 2;
      } else if (opt === "byradius" && left >= 2 && shape?.kind !== "box") {
        const radius = floatArg(argv[i + 1], "ERR need numeric radius");
        if (radius < 0) fail("ERR radius cannot be negative");
        shape = { kind: "radius", radius, toMeters: unitArg(argv[i + 2]!) };
        i += 2;
      } else if (opt === "bybox" && left >= 3 && shape?.kind !== "radius") {
        const width = floatArg(argv[i + 1], "ERR need numeric width");
        const height = floatArg(argv[i + 2], "ERR need numeric height");
        if (width < 0 || height < 0) fail("ERR height or width cannot be negative");
        shape = { kind: "box", width, height, toMeters: unitArg(argv[i + 3]!) };
        i += 3;
      } else fail(Errors.syntax);
    }
    if (store && (withDist || withHash || withCoord)) {
      fail("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options");
    }
    if (fromMember === undefined && fromPoint === undefined) {
      fail(`ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ${argv[0]}`);
    }
    if (shape === undefined) {
      fail(`ERR exactly one of BYRADIUS and BYBOX can be specified for ${argv[0]}`);
    }
    if (any && count === 0) fail("ERR the ANY argument requires COUNT argument");
    if (zset === undefined) return store ? storeZSet(ctx, argv[1]!, []) : R.array([]);
    let centre = fromPoint;
    if (fromMember !== undefined) {
      const score = zset.score(fromMember);
      if (score === undefined) fail("ERR could not decode requested zset member");
      centre = decode(score);
    }
    const origin = centre!;
    let matches: Match[] = [];
    for (const entry of zset.entries()) {
      const point = decode(entry.score);
      const meters = within(shape, origin, point);
      if (meters !== undefined) matches.push({ entry, point, meters });
      if (any && matches.length >= count) break;
    }
    // COUNT without ANY needs the closest ones, so it implies ASC.
    const order = sort ?? (count > 0 && !any ? "asc" : undefined);
    if (order !== undefined) {
      matches.sort((a, b) => (order === "asc" ? a.meters - b.meters : b.meters - a.meters));
    }
    if (count > 0) matches = matches.slice(0, count);
    const toMeters = shape.toMeters;
    if (store) {
      const entries = matches.map(({ entry, meters }) =>
        storeDist ? { member: entry.member, score: meters / toMeters } : entry,
      );
      return storeZSet(ctx, argv[1]!, entries);
    }
    if (!withDist && !withHash && !withCoord)
      return withScores(
        matches.map((m) => m.entry),
        false,
      );
    return R.array(
      matches.map(({ entry, point, meters }) => {
        const item: Reply[] = [R.bulk(entry.member)];
        if (withDist) item.push(R.bulk(formatDistance(meters / toMeters)));
        if (withHash) item.push(R.int(BigInt(entry.score)));
        if (withCoord) {
          item.push(R.bulks([formatCoordinate(point.lon), formatCoordinate(point.lat)]));
        }
        return R.array(item);
      }),
    );
  };
}

export const geoCommands: readonly CommandSpec[] = [
  { name: "geoadd", arity: -5, write: true, handler: geoadd },
  { name: "geopos", arity: -2, handler: geopos },
  { name: "geohash", arity: -2, handler: geohash },
  { name: "geodist", arity: -4, handler: geodist },
  { name: "geosearch", arity: -7, handler: geosearchCommand(false) },
  { name: "geosearchstore", arity: -8, write: true, handler: geosearchCommand(true) },
];
