/**
 * What a chain is, learned from its node rather than assumed: its block cadence and whether its
 * `pending` tag pre-confirms, probed at start and every few minutes, with the settings that override them.
 */
export { measureBlockTime, probeChain, type ChainProbe } from './probe.js'
export {
  createChainProfiler,
  MIN_HEAD_POLL_MS,
  PROBE_EVERY_MS,
  profileOf,
  whilePreconfirming,
  type ChainProfile,
  type ChainProfiler,
  type ChainProfileSettings,
  type PreconfirmationsSetting,
} from './profile.js'
export { CHAIN_ID_WATCH_MS, ChainMismatchError, createChainIdentity, type ChainIdentity } from './identity.js'
