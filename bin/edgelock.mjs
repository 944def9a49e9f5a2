#!/usr/bin/env node
// Launcher for the built package: the CLI lives in dist/dev/cli.js (run `npm run build` first).
import { main } from "../dist/dev/cli.js";

process.exitCode = await main(process.argv.slice(2));
