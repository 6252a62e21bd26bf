/**
 * The codetrail daemon: `npm start -- [--role api|worker|scheduler|all]` (default `all`).
 * Applies migrations, runs the role's parts until SIGINT/SIGTERM, then stops them gracefully.
 */
import type { Config, Role } from './config/index.js'
import type { Service } from './daemon.js'

async function main() {
  // Listening before anything else loads: a signal that comes while the daemon starts stops it once it
  // has started, instead of killing it halfway (its migrations, its first jobs) or before a handler
  // exists (loading the daemon's modules takes most of a start). A second one while it is still
  // starting (a start-up that hangs) ends it at once.
  let signalled: NodeJS.Signals | undefined
  let started: Service[] | undefined
  let onStarted: ((signal: NodeJS.Signals) => void) | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      if (!started) process.exit(1)
      return
    }
    signalled = signal
    onStarted?.(signal)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const [{ loadConfig, secretsOf }, { parseRole, startDaemon, stopServices }, { createLogger }, { createRedactor }] = await Promise.all([
    import('./config/index.js'),
    import('./daemon.js'),
    import('./logger.js'),
    import('./utils/redact.js'),
  ])

  let config: Config
  let role: Role
  try {
    role = parseRole(process.argv.slice(2))
    config = loadConfig()
  } catch (error) {
    process.stderr.write(`codetrail: ${(error as Error).message}\n`)
    process.exit(2)
  }
  const secrets = secretsOf(config)
  const redact = createRedactor(secrets)
  const logger = createLogger(config.logLevel, { role }, { secrets })
  const stop = async (signal: NodeJS.Signals, services: Service[]) => {
    logger.info({ signal }, 'shutting down')
    await stopServices(services, logger)
    logger.info('stopped')
    logger.flush()
    process.exit(0)
  }
  onStarted = (signal) => {
    if (started) void stop(signal, started)
    else logger.info({ signal }, 'stopping once started')
  }
  if (signalled) logger.info({ signal: signalled }, 'stopping once started')
  logger.info('starting')
  try {
    started = await startDaemon(config, role, logger)
  } catch (error) {
    logger.fatal({ reason: (error as Error).message }, 'codetrail could not start')
    process.stderr.write(`codetrail could not start: ${redact((error as Error).message)}\n`)
    process.exit(1)
  }
  if (signalled) await stop(signalled, started)
}

await main()
