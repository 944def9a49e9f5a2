/**
 * Release one hold of an owner of the fair lock: the plain lock's release (exclusive/release.ts),
 * which learns the hold and reserves the freed lock for the head waiter.
 */
export { releaseHold as releaseFairHold } from "../exclusive/release.js";
