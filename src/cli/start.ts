/**
 * `codetrail start [--role …]`: runs the role's parts until SIGINT/SIGTERM, then stops them. A second
 * signal exits at once; a stop that outlasts `SHUTDOWN_TIMEOUT_MS` exits 1 naming the part that hung.
 */
import type { Role } from '../config/index.js'
import type { Service } from '../internal/shutdown.js'

export async function start(role: Role, configFile?: string): Promise<void> {
  // Listening before the daemon's modules load (most of a start): a signal that comes while the daemon
  // starts stops it once it has started, instead of killing it halfway (its migrations, its first jobs).
  let signalled: NodeJS.Signals | undefined
  let started: Service[] | undefined
  /** What the shutdown is waiting for, named when the deadline passes. */
  let waitingOn = 'the start-up'
  let onFirstSignal: ((signal: NodeJS.Signals) => void) | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      process.stderr.write(`codetrail: ${signal} while stopping: exiting at once without waiting for ${waitingOn}\n`)
      process.exit(1)
    }
    signalled = signal
    onFirstSignal?.(signal)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const [{ loadConfig, secretsOf }, { startDaemon }, { createLogger }, { stopServices }, { createRedactor }] = await Promise.all([
    import('../config/index.js'),
    import('../daemon.js'),
    import('../internal/logger.js'),
    import('../internal/shutdown.js'),
    import('../utils/redact.js'),
  ])

  const config = loadConfig(process.env, { file: configFile })
  const secrets = secretsOf(config)
  const redact = createRedactor(secrets)
  const logger = createLogger(config.logLevel, { role }, { secrets })
  const armDeadline = (signal: NodeJS.Signals) => {
    logger.info({ signal }, started ? 'shutting down' : 'stopping once started')
    setTimeout(() => {
      logger.fatal({ waiting_on: waitingOn, shutdown_timeout_ms: config.shutdownTimeoutMs }, 'shutdown deadline passed')
      logger.flush()
      process.stderr.write(
        `codetrail: shutdown did not finish within SHUTDOWN_TIMEOUT_MS=${config.shutdownTimeoutMs} ms: ${waitingOn} did not stop\n`,
      )
      process.exit(1)
    }, config.shutdownTimeoutMs).unref()
  }
  const stop = async (services: Service[], exitCode = 0) => {
    // Each part names itself while it stops, so a deadline that passes names the one that hung.
    await stopServices(
      services.map((service) => ({
        name: service.name,
        stop: () => {
          waitingOn = service.name
          return service.stop()
        },
      })),
      logger,
    )
    logger.info('stopped')
    logger.flush()
    process.exit(exitCode)
  }
  onFirstSignal = (signal) => {
    armDeadline(signal)
    if (started) void stop(started)
  }
  if (signalled) armDeadline(signalled)
  logger.info('starting')
  try {
    started = await startDaemon(config, role, logger, {
      // One line naming what is wrong, then the same stop as a signal's, ending in exit 1.
      onFatal: (error) => {
        if (signalled) return
        signalled = 'SIGTERM'
        process.stderr.write(`codetrail: ${redact(error.message)}: stopping\n`)
        armDeadline(signalled)
        if (started) void stop(started, 1)
      },
    })
  } catch (error) {
    logger.fatal({ reason: (error as Error).message }, 'codetrail could not start')
    process.stderr.write(`codetrail could not start: ${redact((error as Error).message)}\n`)
    process.exit(1)
  }
  if (signalled) await stop(started)
}
