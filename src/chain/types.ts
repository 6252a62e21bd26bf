import type { BlockRow } from '../store/index.js'

/** A block header as the chain module needs it: enough to link blocks and check logs against them. */
export type Header = BlockRow & { parentHash: string; logsBloom?: string }
