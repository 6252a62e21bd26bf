/**
 * Limits of the node that both the configuration's defaults and the RPC layer hold to; constants only,
 * so the RPC layer reads them without reaching the configuration itself.
 */

/** Widest `eth_getLogs` range: providers refuse ranges of 2,000 blocks and more. */
export const MAX_BLOCKS_PER_REQUEST = 1999

/**
 * `RPC_MAX_RESPONSE_BYTES` by default: the widest range of a chain as busy as Base (~50 kB of logs per
 * block), with half again as headroom: 150 MB, Alchemy's own cap. A larger answer splits the range.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = Math.ceil(MAX_BLOCKS_PER_REQUEST * 50_000 * 1.5)
