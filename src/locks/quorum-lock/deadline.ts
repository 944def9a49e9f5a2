/** Waiting on a database with a bound: a slow one must not hold up the quorum. */

export type Bounded<T> = PromiseSettledResult<T> | { readonly status: "timeout" };

/** The promise runs on after a timeout. */
export function settleWithin<T>(promise: Promise<T>, ms: number): Promise<Bounded<T>> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ status: "timeout" }), Math.max(0, ms));
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve({ status: "fulfilled", value });
      },
      (reason: unknown) => {
        clearTimeout(timer);
        resolve({ status: "rejected", reason });
      },
    );
  });
}
