/**
 * The codetrail daemon: `npm start -- [--role api|worker|scheduler|all]` (default `all`).
 * Applies migrations, runs the role's parts until SIGINT/SIGTERM, then stops them gracefully.
 */
import { loadConfig, type Config, type Role } from './config/index.js'
import { parseRole, startDaemon, stopServices, type Service } from './daemon.js'
import { createLogger } from './logger.js'

async function main() {
  let config: Config
  let role: Role
  try {
    role = parseRole(process.argv.slice(2))
    config = loadConfig()
  } catch (error) {
    process.stderr.write(`codetrail: ${(error as Error).message}\n`)
    process.exit(2)
  }
  const logger = createLogger(config.logLevel, { role })
  let services: Service[]
  try {
    services = await startDaemon(config, role, logger)
  } catch (error) {
    logger.fatal({ reason: (error as Error).message }, 'codetrail could not start')
    process.stderr.write(`codetrail could not start: ${(error as Error).message}\n`)
    process.exit(1)
  }
  let stopping = false
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down')
    await stopServices(services, logger)
    logger.info('stopped')
    logger.flush()
    process.exit(0)
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
}

await main()
