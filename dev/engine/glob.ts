/**
 * Glob matching with Redis's `stringmatchlen` rules (KEYS, SCAN MATCH): `*`, `?`, `[set]`,
 * `[^set]`, ranges `[a-z]`, and `\` to escape. Works on binary strings.
 */
export function globMatch(pattern: string, subject: string): boolean {
  return matchFrom(pattern, 0, subject, 0, 0);
}

function matchFrom(p: string, pi: number, s: string, si: number, depth: number): boolean {
  // Guard against pathological patterns like `*a*a*a*...` recursing without bound.
  if (depth > 1000) return false;
  while (pi < p.length) {
    const c = p[pi];
    if (c === "*") {
      while (p[pi + 1] === "*") pi++;
      if (pi + 1 === p.length) return true;
      for (let k = si; k <= s.length; k++) {
        if (matchFrom(p, pi + 1, s, k, depth + 1)) return true;
      }
      return false;
    }
    if (si >= s.length) return false;
    if (c === "?") {
      pi++;
      si++;
      continue;
    }
    if (c === "[") {
      const result = matchClass(p, pi + 1, s.charCodeAt(si));
      if (!result.matched) return false;
      pi = result.next;
      si++;
      continue;
    }
    if (c === "\\" && pi + 1 < p.length) pi++;
    if (p[pi] !== s[si]) return false;
    pi++;
    si++;
  }
  return si === s.length;
}

/** Matches one char against a `[...]` class starting after the `[`; returns where the class ends. */
function matchClass(p: string, start: number, ch: number): { matched: boolean; next: number } {
  let i = start;
  const negate = p[i] === "^";
  if (negate) i++;
  let matched = false;
  while (i < p.length && p[i] !== "]") {
    if (p[i] === "\\" && i + 1 < p.length) {
      i++;
      if (p.charCodeAt(i) === ch) matched = true;
      i++;
    } else if (p[i + 1] === "-" && i + 2 < p.length) {
      let lo = p.charCodeAt(i);
      let hi = p.charCodeAt(i + 2);
      if (lo > hi) [lo, hi] = [hi, lo];
      if (ch >= lo && ch <= hi) matched = true;
      i += 3;
    } else {
      if (p.charCodeAt(i) === ch) matched = true;
      i++;
    }
  }
  // An unterminated class simply ends with the pattern, as in Redis.
  return { matched: negate ? !matched : matched, next: i < p.length ? i + 1 : i };
}
