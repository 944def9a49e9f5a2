/** The bench's Worker entry point (see app.ts and wrangler.toml). */
import { createBenchWorkerApp } from "./app.js";

export default createBenchWorkerApp();
