/** BullMQ on Redis: the range jobs' queue and workers, their gas fills', the webhook drains', the connections they share. */
export * from './gas.js'
export * from './ranges.js'
export * from './redis.js'
export * from './webhooks.js'
