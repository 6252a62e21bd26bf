/** npm run migrate: `codetrail migrate` (see src/cli/migrate.ts). */
import { runCli } from '../src/cli/index.js'

await runCli(['migrate', ...process.argv.slice(2)])
