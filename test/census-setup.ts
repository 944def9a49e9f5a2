/** The node project's global setup: a test run's script census starts empty (see support/script-census.ts). */
import { clearScriptCensus } from "./support/script-census.js";

export default function setup(): void {
  clearScriptCensus();
}
