/** `codetrail migrate` and `codetrail migrate status`. */
import { loadConfig, secretsOf } from '../config/index.js'
import { createStore, definitionsApplied, migrationStatus, runMigrations, type Store } from '../store/index.js'
import { createRedactor } from '../utils/redact.js'

/** Runs `work` on a one-connection store of DATABASE_URL; any failure is one masked line and exit 1. */
async function withDatabase(configFile: string | undefined, work: (store: Store, database: string) => Promise<void>): Promise<number> {
  const config = loadConfig(process.env, { file: configFile })
  const redact = createRedactor(secretsOf(config))
  const store = createStore({ databaseUrl: config.databaseUrl, max: 1 })
  try {
    await work(store, new URL(config.databaseUrl).pathname.slice(1) || 'postgres')
    return 0
  } catch (error) {
    process.stderr.write(`migrate: ${redact((error as Error).message)}\n`)
    return 1
  } finally {
    await store.close()
  }
}

export function migrate(configFile?: string): Promise<number> {
  return withDatabase(configFile, async (store, database) => {
    await runMigrations(store.pool)
    process.stdout.write(`migrations applied to ${database}\n`)
  })
}

export function migrateStatus(configFile?: string): Promise<number> {
  return withDatabase(configFile, async (store, database) => {
    const migrations = await migrationStatus(store.pool)
    for (const { tag, applied } of migrations) process.stdout.write(`${applied ? 'applied' : 'pending'}  ${tag}\n`)
    process.stdout.write(
      `${(await definitionsApplied(store.pool)) ? 'applied' : 'pending'}  views, functions and triggers of src/store/sql\n`,
    )
    const pending = migrations.filter((m) => !m.applied).length
    process.stdout.write(`${database}: ${migrations.length - pending} applied, ${pending} pending\n`)
  })
}
