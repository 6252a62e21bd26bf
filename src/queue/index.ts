/** BullMQ on Redis: the range jobs' queue and workers, the webhook drains' queue and workers, the connections they share. */
export * from './ranges.js'
export * from './redis.js'
export * from './webhooks.js'
export * from './gas.js'
