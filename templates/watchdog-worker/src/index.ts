/**
 * The separate watchdog Worker: it only hosts the LockWatchdog Durable Object. Other Workers
 * reach the objects through their own binding with `script_name = "edgelock-watchdog"`.
 */
export { LockWatchdog } from "edgelock/durable-object";

export default {
  fetch(): Response {
    return new Response("edgelock watchdog: bind LockWatchdog from your Workers\n", {
      status: 404,
    });
  },
} satisfies ExportedHandler;
