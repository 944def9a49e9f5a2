/**
 * `edgelock/inspector`: every lock of a database on a page or as JSON, with force-release and
 * removal of dead waiters, and a client's recent waits; its own entry, so no Worker that only
 * locks ships it. See docs/inspector.md.
 * @module
 */
export type { ActionResult } from "./actions.js";
export { type InspectorHandlerOptions, inspectorHandler } from "./handler.js";
export { type InspectorOptions, inspector } from "./hono.js";
export {
  type RecentWaitsOptions,
  type RecentWaitsRecorder,
  recordRecentWaits,
} from "./recent-waits.js";
export type {
  InspectedHolder,
  InspectedLatch,
  InspectedLock,
  InspectedPermitHold,
  InspectedPermitWaiter,
  InspectedReadHold,
  InspectedSemaphore,
  InspectedWaiter,
  InspectedWaits,
  InspectorAccess,
  InspectorSnapshot,
  RecentWait,
  RecentWaitStep,
  RefreshCost,
} from "./types.js";
