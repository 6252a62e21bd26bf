/**
 * The `codetrail` command: `start`, `migrate`, `migrate status` and `backfill`, each with `--help` and
 * `--version`. Usage errors (an unknown command or flag, a bad flag value) exit 2, configuration errors 1.
 */
import { readFileSync } from 'node:fs'
import { Command, Option, type CommanderError } from 'commander'
import { ConfigError, ROLES, type Role } from '../config/index.js'
import { UsageError } from '../internal/errors.js'
import type { BackfillFlags } from './backfill.js'

const CONFIG_FLAG = [
  '--config <file>',
  'the config file (YAML or JSON); default: CODETRAIL_CONFIG, else codetrail.config.{yaml,yml,json} in this directory, else the environment alone',
] as const

/** The package's version, from its package.json (two levels up from src/cli, three from dist/src/cli). */
function readVersion(): string {
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'codetrail' && pkg.version) return pkg.version
    } catch {
      // Not this level: try the next.
    }
  }
  return 'unknown'
}

export const VERSION = readVersion()

/** Help and version exit 0; every other error commander reports is a usage error. */
function exitOnUsage(error: CommanderError): never {
  process.exit(error.exitCode === 0 ? 0 : 2)
}

/** Runs a command's action; a configuration error ends it with its one line and exit 1. */
function configured<A extends unknown[]>(action: (...args: A) => Promise<number | undefined>) {
  return async (...args: A) => {
    try {
      const code = await action(...args)
      // A command that has finished ends the process, whatever its clients left open.
      if (code !== undefined) process.exit(code)
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error
      process.stderr.write(`codetrail: ${error.message}\n`)
      process.exit(1)
    }
  }
}

const collect = (value: string, previous: string[]) => [...previous, value]

export function createProgram(): Command {
  const program = new Command('codetrail')
    .description('EVM log indexer with pre-confirmed state and ERC-8021 builder-code attribution')
    .version(VERSION)
    .exitOverride(exitOnUsage)
    .showHelpAfterError('(add --help for usage)')

  program
    .command('start')
    .description('run the daemon: the parts of the given role until SIGINT/SIGTERM')
    .addOption(new Option('--role <role>', 'which parts run in this process').choices(ROLES).default('all'))
    .option(...CONFIG_FLAG)
    .version(VERSION)
    .action(
      configured(async ({ role, config }: { role: Role; config?: string }) => {
        const { start } = await import('./start.js')
        await start(role, config)
      }),
    )

  const migrate = program
    .command('migrate')
    .description('apply the database migrations to DATABASE_URL')
    .option(...CONFIG_FLAG)
    .version(VERSION)
    .action(
      configured(async ({ config }: { config?: string }) => {
        const { migrate } = await import('./migrate.js')
        return migrate(config)
      }),
    )
  migrate
    .command('status')
    .description('list the applied and pending migrations of DATABASE_URL without applying any')
    .option(...CONFIG_FLAG)
    .version(VERSION)
    .action(
      configured(async ({ config }: { config?: string }) => {
        const { migrateStatus } = await import('./migrate.js')
        return migrateStatus(config)
      }),
    )

  program
    .command('backfill')
    .description('index a block range: enqueue its missing chunks and, unless --no-wait, work on them with progress')
    .requiredOption('--from <block>', 'first block')
    .requiredOption('--to <block>', 'last block: a number, latest, safe or finalized')
    .option('--address <address>', 'only logs of this contract (repeatable; default: the configured filter)', collect, [])
    .option('--topic0 <topic>', 'only logs with this first topic (repeatable)', collect, [])
    .option('--no-wait', 'enqueue the chunk jobs and exit; running workers index them')
    .option('--json', 'progress and results as JSON lines on stdout')
    .option('--chain <chain>', "the configured chain's id or name (needed when the config file lists several)")
    .option(...CONFIG_FLAG)
    .version(VERSION)
    .action(
      configured(async (flags: BackfillFlags, command: Command) => {
        const { backfill, parseBackfillOptions } = await import('./backfill.js')
        let options: ReturnType<typeof parseBackfillOptions>
        try {
          options = parseBackfillOptions(flags)
        } catch (error) {
          if (error instanceof UsageError) command.error(`error: ${error.message}`, { exitCode: 2 })
          throw error
        }
        return backfill(options)
      }),
    )

  return program
}

/** Parses `args` (what follows the command's name) and runs the chosen command; sets the exit code. */
export async function runCli(args: readonly string[]): Promise<void> {
  await createProgram().parseAsync([...args], { from: 'user' })
}
