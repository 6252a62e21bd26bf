#!/usr/bin/env node
/** The package's command, `codetrail start|migrate|backfill …` (see src/cli/index.ts). */
import { runCli } from '../src/cli/index.js'

await runCli(process.argv.slice(2))
