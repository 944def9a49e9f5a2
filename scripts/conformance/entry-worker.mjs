/**
 * The suite inside workerd, bundled as a Worker: GET /?prefix=P answers the rows as JSON.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { runConformance } from "./suite.mjs";

export default {
  async fetch(request, env) {
    const prefix = new URL(request.url).searchParams.get("prefix") ?? "conformance";
    const rows = await runConformance({ redis: Redis.fromEnv(env), prefix });
    return Response.json(rows);
  },
};
