/**
 * The harness process's own timer lateness. A tick every few ms records how late it fired: a
 * library timer (a lease's end, a renewal deadline) due while the event loop was blocked cannot
 * fire before the loop is free again, on a loaded machine by hundreds of ms. The lost-signal check
 * excuses exactly the lateness measured around each deadline, on top of its fixed slack.
 */
/** A tick this late or less found the loop free. */
const ON_TIME_MS = 10;

export class LoopLag {
  readonly #intervalMs: number;
  /** Due times and lateness of the ticks, in due order. */
  readonly #due: number[] = [];
  readonly #late: number[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(intervalMs = 10) {
    this.#intervalMs = intervalMs;
  }

  start(): void {
    let due = Date.now() + this.#intervalMs;
    const tick = () => {
      const now = Date.now();
      this.record(due, now);
      due = now + this.#intervalMs;
      this.#timer = setTimeout(tick, this.#intervalMs);
    };
    this.#timer = setTimeout(tick, this.#intervalMs);
  }

  /** A tick due at `due` fired at `firedAt` (ticks are recorded in due order). */
  record(due: number, firedAt: number): void {
    this.#due.push(due);
    this.#late.push(Math.max(0, firedAt - due));
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }

  /**
   * The most a timer due between `from` and `to` may have fired late: over the ticks whose wait
   * overlapped that span (a block that began before `from` counts), how long past its due time,
   * or past `from` if later, each fired; and at least until the loop was first seen free after
   * `from` (a tick due then fired on time). A stall of several blocks in a row shows each tick
   * only a block late, while a timer due at its start waits for all of them.
   */
  lateness(from: number, to: number): number {
    return Math.max(this.#latestTick(from, to), this.#firstFreeAfter(from) - from);
  }

  /** When a tick due at or after `from` first fired on time; the last tick's firing if none did. */
  #firstFreeAfter(from: number): number {
    let firedAt = from;
    for (let i = this.#firstFrom(from); i < this.#due.length; i++) {
      const due = this.#due[i]!;
      if (due < from) continue;
      firedAt = due + this.#late[i]!;
      if (this.#late[i]! <= ON_TIME_MS) break;
    }
    return firedAt;
  }

  #firstFrom(from: number): number {
    let low = 0;
    let high = this.#due.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.#due[middle]! < from - 10_000) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  #latestTick(from: number, to: number): number {
    let most = 0;
    // Ticks due before a 10 s block could not reach `from`: start the scan there.
    for (let i = this.#firstFrom(from); i < this.#due.length && this.#due[i]! <= to; i++) {
      const due = this.#due[i]!;
      const firedAt = due + this.#late[i]!;
      if (firedAt > from) most = Math.max(most, firedAt - Math.max(due, from));
    }
    return most;
  }

  /** The largest lateness seen in the whole run. */
  get worstMs(): number {
    return this.#late.reduce((most, late) => Math.max(most, late), 0);
  }
}
