export { createDispatcher, type Dispatcher, type DispatcherContext } from './dispatcher.js'
export { matchesSubscription, toPayload, type EventPayload } from './events.js'
export { signPayload, verifySignature, SIGNATURE_TOLERANCE_SECONDS } from './signature.js'
export { createEventStream, KEEPALIVE_MS, type EventStream, type StreamItem } from './stream.js'
