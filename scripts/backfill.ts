/** npm run backfill -- --from <block> --to <block> …: `codetrail backfill` (see src/cli/backfill.ts). */
import { runCli } from '../src/cli/index.js'

await runCli(['backfill', ...process.argv.slice(2)])
