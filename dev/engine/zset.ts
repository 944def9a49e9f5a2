/** A sorted set: a member → score map plus an array kept in Redis order (score, then member bytes). */

export interface ZEntry {
  readonly member: string;
  readonly score: number;
}

/** One end of a score range; `exclusive` is the `(` prefix. */
export interface ScoreBound {
  readonly value: number;
  readonly exclusive: boolean;
}

/** One end of a lex range: `-`/`+` are the open ends, otherwise `[x` (inclusive) or `(x`. */
export type LexBound =
  | { readonly kind: "min" | "max" }
  | { readonly kind: "value"; readonly value: string; readonly exclusive: boolean };

function aboveLexMin(member: string, min: LexBound): boolean {
  if (min.kind !== "value") return min.kind === "min";
  return min.exclusive ? member > min.value : member >= min.value;
}

function belowLexMax(member: string, max: LexBound): boolean {
  if (max.kind !== "value") return max.kind === "max";
  return max.exclusive ? member < max.value : member <= max.value;
}

function compare(aScore: number, aMember: string, bScore: number, bMember: string): number {
  if (aScore < bScore) return -1;
  if (aScore > bScore) return 1;
  if (aMember < bMember) return -1;
  return aMember > bMember ? 1 : 0;
}

export class ZSet {
  private readonly scores = new Map<string, number>();
  private readonly ordered: ZEntry[] = [];

  get size(): number {
    return this.ordered.length;
  }

  score(member: string): number | undefined {
    return this.scores.get(member);
  }

  /** Inserts or moves `member` to `score`. */
  set(member: string, given: number): void {
    // Redis never reports a negative zero score.
    const score = given === 0 ? 0 : given;
    const current = this.scores.get(member);
    if (current !== undefined) {
      if (current === score) return;
      this.ordered.splice(this.position(current, member), 1);
    }
    this.scores.set(member, score);
    this.ordered.splice(this.position(score, member), 0, { member, score });
  }

  delete(member: string): boolean {
    const current = this.scores.get(member);
    if (current === undefined) return false;
    this.scores.delete(member);
    this.ordered.splice(this.position(current, member), 1);
    return true;
  }

  /** 0-based rank in ascending order, or undefined. */
  rank(member: string): number | undefined {
    const current = this.scores.get(member);
    return current === undefined ? undefined : this.position(current, member);
  }

  /** Entries with ascending ranks `start..stop` inclusive (already clamped by the caller). */
  slice(start: number, stop: number): ZEntry[] {
    return this.ordered.slice(start, stop + 1);
  }

  /** Entries whose score is inside [min, max] (respecting exclusive bounds), ascending. */
  rangeByScore(min: ScoreBound, max: ScoreBound): ZEntry[] {
    const from = this.firstInRange(min);
    const out: ZEntry[] = [];
    for (let i = from; i < this.ordered.length; i++) {
      const entry = this.ordered[i]!;
      if (max.exclusive ? entry.score >= max.value : entry.score > max.value) break;
      out.push(entry);
    }
    return out;
  }

  /**
   * Entries between two lex bounds, ascending. Like Redis this assumes equal scores: it starts at
   * the first member inside `min` and stops at the first member past `max`.
   */
  rangeByLex(min: LexBound, max: LexBound): ZEntry[] {
    const out: ZEntry[] = [];
    let i = this.ordered.findIndex((entry) => aboveLexMin(entry.member, min));
    if (i < 0) return out;
    for (; i < this.ordered.length && belowLexMax(this.ordered[i]!.member, max); i++) {
      out.push(this.ordered[i]!);
    }
    return out;
  }

  /** Index of the first entry with score above the lower bound. */
  private firstInRange(min: ScoreBound): number {
    let lo = 0;
    let hi = this.ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = this.ordered[mid]!.score;
      const below = min.exclusive ? s <= min.value : s < min.value;
      if (below) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Lower-bound position of (score, member) in the ordered array. */
  private position(score: number, member: string): number {
    let lo = 0;
    let hi = this.ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const entry = this.ordered[mid]!;
      if (compare(entry.score, entry.member, score, member) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  entries(): readonly ZEntry[] {
    return this.ordered;
  }
}
