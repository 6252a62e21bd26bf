/**
 * What a chain is, learned from its node rather than assumed: its block cadence and whether its
 * `pending` tag pre-confirms, probed at start and every few minutes, with the settings that override them.
 */
export { probeChain } from './probe.js'
export {
  createChainProfiler,
  whilePreconfirming,
  type ChainProfiler,
} from './profile.js'
export { CHAIN_ID_WATCH_MS, ChainMismatchError, createChainIdentity, type ChainIdentity } from './identity.js'
