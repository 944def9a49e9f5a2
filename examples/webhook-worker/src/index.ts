/** The Worker: the webhook app of app.ts. Configuration: wrangler.toml and README.md. */
import { createApp } from "./app.js";

export default createApp();
