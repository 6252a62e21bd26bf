#!/usr/bin/env node
/**
 * The package's command: `codetrail start|migrate|backfill …` runs that entry point with the arguments
 * that follow (`codetrail start --role worker`, `codetrail backfill --from 1 --to 2`).
 */
const COMMANDS = {
  start: '../src/main.js',
  migrate: './migrate.js',
  backfill: './backfill.js',
} as const

const USAGE = `usage: codetrail <command> [options]

commands:
  start [--role api|worker|scheduler|all]    run the daemon (default role: all)
  migrate                                    apply the database migrations to DATABASE_URL
  backfill --from <block> --to <block> ...   index a block range (codetrail backfill --help)
`

const command = process.argv[2]
if (command === 'help' || command === '--help' || command === '-h') {
  process.stdout.write(USAGE)
  process.exit(0)
}
if (command === undefined || !Object.hasOwn(COMMANDS, command)) {
  process.stderr.write(`codetrail: ${command === undefined ? 'no command' : `unknown command "${command}"`}\n\n${USAGE}`)
  process.exit(2)
}
// Each entry point reads its own options from process.argv: drop the command name so they see only theirs.
process.argv.splice(2, 1)
await import(COMMANDS[command as keyof typeof COMMANDS])
