/** The daemon: `npm start -- [--role api|worker|scheduler|all]`, i.e. `codetrail start`. */
import { runCli } from './cli/index.js'

await runCli(['start', ...process.argv.slice(2)])
