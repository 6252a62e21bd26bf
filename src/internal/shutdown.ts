import type { Logger } from './logger.js'

/** A running part of the process; `stop` finishes or releases its in-flight work. */
export type Service = { name: string; stop: () => Promise<void> }

/** Stops services in reverse start order, so the store closes last; one that fails to stop does not keep the others running. */
export async function stopServices(services: Service[], logger: Logger): Promise<void> {
  for (const service of [...services].reverse()) {
    try {
      await service.stop()
    } catch (error) {
      logger.warn({ service: service.name, err: error }, 'service did not stop cleanly')
    }
  }
}
