/** A block header as the chain module needs it: enough to link blocks and check logs against them. */
export type { BlockHeader as Header } from '../rpc/index.js'
