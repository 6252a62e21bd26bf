/** npm run migrate — applies the drizzle-kit migrations in `migrations/` to DATABASE_URL. */
import { ConfigError, loadConfig, secretsOf } from '../src/config/index.js'
import { createStore, runMigrations } from '../src/store/index.js'
import { createRedactor } from '../src/utils/redact.js'

/** Masks the configuration's secrets in what this command prints; set once the configuration is read. */
let redact = (text: string) => text
try {
  const config = loadConfig()
  redact = createRedactor(secretsOf(config))
  const store = createStore({ databaseUrl: config.databaseUrl, max: 1 })
  try {
    await runMigrations(store.pool)
    process.stdout.write(`migrations applied to ${new URL(config.databaseUrl).pathname.slice(1) || 'postgres'}\n`)
  } finally {
    await store.close()
  }
} catch (error) {
  process.stderr.write(`migrate: ${redact(error instanceof ConfigError ? error.message : (error as Error).message)}\n`)
  process.exit(1)
}
