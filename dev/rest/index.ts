/** The Upstash-compatible REST server and its parts. */

export { formatJsonNumber } from "./arguments.js";
export { AUTH_ERROR_MESSAGE } from "./auth.js";
export { encodeResultValue, type ResponseEncoding } from "./encode.js";
export {
  createPrng,
  FaultController,
  type FaultCounts,
  type FaultDecision,
  type FaultOptions,
} from "./faults.js";
export type { RouteKind } from "./routes.js";
export { type RestServer, type RestServerOptions, startRestServer } from "./server.js";
export { ServerStats, type StatsSnapshot } from "./stats.js";
