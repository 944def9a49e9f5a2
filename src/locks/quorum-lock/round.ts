/**
 * One quorum round: an operation on several databases in parallel under one deadline, ending
 * when the caller's rule says the outcome is certain, all answered, or the deadline passed;
 * requests in flight then run on, reachable through `answers`.
 */

export type RoundSlot<T> =
  | { readonly state: "unsent" }
  | { readonly state: "pending" }
  | { readonly state: "answered"; readonly value: T }
  | { readonly state: "failed"; readonly error: unknown };

export interface RoundResult<T> {
  /** As the round ended. */
  readonly slots: readonly RoundSlot<T>[];
  /** Per request sent (for those still pending); undefined when it failed. */
  readonly answers: readonly (Promise<T | undefined> | undefined)[];
  /** The deadline, not the answers, ended the round. */
  readonly timedOut: boolean;
}

export interface RoundPlan<T> {
  readonly count: number;
  /** Client clock. */
  readonly deadline: number;
  readonly maxConcurrent: number;
  readonly send: (index: number) => Promise<T>;
  /** True once the outcome is certain; the round ends early then. */
  readonly decided: (slots: readonly RoundSlot<T>[]) => boolean;
}

export function runRound<T>(plan: RoundPlan<T>): Promise<RoundResult<T>> {
  const slots: RoundSlot<T>[] = Array.from({ length: plan.count }, () => ({ state: "unsent" }));
  const answers: (Promise<T | undefined> | undefined)[] = slots.map(() => undefined);
  return new Promise((resolve) => {
    let next = 0;
    let inFlight = 0;
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ slots: slots.slice(), answers, timedOut });
    };
    const timer = setTimeout(() => finish(true), Math.max(0, plan.deadline - Date.now()));
    const settledAll = () => slots.every((s) => s.state === "answered" || s.state === "failed");
    const launch = () => {
      while (!done && inFlight < plan.maxConcurrent && next < slots.length) {
        const i = next++;
        slots[i] = { state: "pending" };
        inFlight += 1;
        const settled = plan.send(i).then(
          (value): RoundSlot<T> => ({ state: "answered", value }),
          (error: unknown): RoundSlot<T> => ({ state: "failed", error }),
        );
        answers[i] = settled.then((slot) => (slot.state === "answered" ? slot.value : undefined));
        void settled.then((slot) => {
          inFlight -= 1;
          if (done) return; // decided without it: the caller adopts or undoes it
          slots[i] = slot;
          if (plan.decided(slots) || settledAll()) finish(false);
          else launch();
        });
      }
    };
    if (plan.decided(slots) || slots.length === 0) finish(false);
    else launch();
  });
}

/** For the decision rules. */
export function countSlots<T>(
  slots: readonly RoundSlot<T>[],
  granted: (value: T) => boolean,
): { granted: number; refused: number; failed: number; open: number } {
  let grantedCount = 0;
  let refused = 0;
  let failed = 0;
  let open = 0;
  for (const slot of slots) {
    if (slot.state === "answered") {
      if (granted(slot.value)) grantedCount += 1;
      else refused += 1;
    } else if (slot.state === "failed") failed += 1;
    else open += 1;
  }
  return { granted: grantedCount, refused, failed, open };
}
