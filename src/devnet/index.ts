import type { Hex } from 'viem'
import { silentLogger, type Logger } from '../logger.js'
import { startAnvil, type Anvil, type AnvilOptions } from './anvil.js'
import { checkWindowOptions, createPendingState, type HeadBlock, type PendingSnapshot } from './pending.js'
import { createUpstreamClient } from './rpc.js'
import { startDevnetServer } from './server.js'

export { findAnvilBinary, freePort, startAnvil, type Anvil, type AnvilOptions } from './anvil.js'
export { DEFAULT_REFRESH_MS, MAX_CANONICAL_LAG, type HeadBlock, type PendingSnapshot } from './pending.js'
export { divergenceOf, ZERO_HASH, type Divergence, type PreconfLog } from './preconf.js'
export { DROP_TRANSACTION_METHOD } from './server.js'

/** Base's block time. */
export const DEFAULT_BLOCK_TIME_MS = 2_000

export type DevnetOptions = Omit<AnvilOptions, 'port' | 'blockTime' | 'noMining'> & {
  /** Milliseconds between mined blocks; 0: only `mine()` mines. */
  blockTimeMs?: number
  /** Port of the pre-confirmed layer (HTTP and WebSocket); omitted: a free one. */
  port?: number
  /** Port of anvil behind it; omitted: a free one. */
  anvilPort?: number
  /** How old a pending answer may be before the pool is looked at again. */
  refreshMs?: number
  /** Answer pending logs in no particular order, as older Base builds do. */
  shuffle?: boolean
  /**
   * Blocks (0–5) the node's canonical chain lags the flashblocks, as a Base node's does: the last this many
   * mined blocks are served only as pending (zero block hash, no header, receipt or canonical log) until
   * that many more are mined, so the pending window spans several block numbers.
   */
  canonicalLag?: number
  /**
   * Fraction (0–1) of transactions whose pending logs differ from what is sealed (other data, or a later
   * position in their block), as about a fifth of Base's pre-confirmations did in 2026; chosen by hash.
   */
  divergence?: number
  logger?: Logger
}

export type MinedBlock = { number: bigint; hash: Hex; timestamp: bigint }

/** A transaction for `anvil_reorg`: raw signed bytes or a request from an unlocked account, and its block offset. */
export type ReorgTransaction = { transaction: Hex | Record<string, unknown>; blockOffset: number }

export type Devnet = {
  /** JSON-RPC over HTTP with pre-confirmed state, like a Base node with Flashblocks. */
  url: string
  /** The same endpoint over WebSocket: `eth_subscribe` `pendingLogs` and `newHeads`. */
  wsUrl: string
  /** Anvil itself, without the pre-confirmed layer. */
  anvilUrl: string
  anvil: Anvil
  /** Blocks the canonical chain at `url` lags anvil's head. */
  canonicalLag: number
  /** Mines the pool into a block now; with `canonicalLag` the node serves it as canonical that many blocks later. */
  mine: () => Promise<MinedBlock>
  /** Removes a pool transaction so it is never mined; true when it was in the pool. */
  dropTransaction: (hash: Hex) => Promise<boolean>
  /** Replaces the last `depth` blocks (`anvil_reorg`); orphaned transactions vanish. */
  reorg: (depth: number, replacements?: ReorgTransaction[]) => Promise<MinedBlock>
  /** The pre-confirmed state as the endpoint serves it now. */
  pending: () => Promise<PendingSnapshot>
  stop: () => Promise<void>
}

const toMinedBlock = (block: HeadBlock): MinedBlock => ({
  number: BigInt(block.number),
  hash: block.hash,
  timestamp: BigInt(block.timestamp),
})

/**
 * Starts anvil without automine and the pre-confirmed layer in front of it, mining every `blockTimeMs`.
 *
 * @example
 * const devnet = await createDevnet({ blockTimeMs: 0 })
 * const client = createPublicClient({ transport: http(devnet.url) })
 * // …send a transaction, read it with eth_getLogs "pending", then:
 * await devnet.mine()
 * await devnet.stop()
 */
export async function createDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const { blockTimeMs = DEFAULT_BLOCK_TIME_MS, port, anvilPort, refreshMs, shuffle, canonicalLag = 0, divergence, logger = silentLogger, ...anvilOptions } =
    options
  checkWindowOptions({ canonicalLag, divergence })
  const anvil = await startAnvil({ ...anvilOptions, port: anvilPort, noMining: true })
  const upstream = createUpstreamClient(anvil.url)
  const pending = createPendingState({ upstream, logger, blockTimeMs, refreshMs, canonicalLag, divergence })
  const server = await startDevnetServer({ upstream, pending, logger, port, shuffle, lagging: canonicalLag > 0 }).catch(async (error: unknown) => {
    upstream.close()
    await anvil.stop()
    throw error
  })

  const latestBlock = async () => toMinedBlock(await upstream.call<HeadBlock>('eth_getBlockByNumber', ['latest', false]))

  const mine = () =>
    pending.changeChain(async () => {
      await upstream.call('evm_mine')
      return latestBlock()
    })

  // Opens the first pending block, fixing its timestamp before anything is served or mined.
  await pending.snapshot().catch(() => undefined)
  pending.start()

  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let mining: Promise<unknown> = Promise.resolve()
  if (blockTimeMs > 0) {
    let nextAt = Date.now() + blockTimeMs
    const schedule = () => {
      timer = setTimeout(() => {
        mining = mine()
          .catch((error: unknown) => logger.warn({ err: error }, 'devnet mining failed'))
          .finally(() => {
            nextAt = Math.max(nextAt + blockTimeMs, Date.now())
            if (!stopped) schedule()
          })
      }, Math.max(0, nextAt - Date.now()))
    }
    schedule()
  }
  logger.info({ url: server.url, anvil_url: anvil.url, block_time_ms: blockTimeMs, canonical_lag: canonicalLag, divergence: divergence ?? 0 }, 'devnet started')

  return {
    url: server.url,
    wsUrl: server.wsUrl,
    anvilUrl: anvil.url,
    anvil,
    canonicalLag,
    mine,
    dropTransaction: (hash) =>
      pending.changeChain(async () => (await upstream.call<Hex | null>('anvil_dropTransaction', [hash])) !== null),
    reorg: (depth, replacements = []) =>
      pending.changeChain(async () => {
        await upstream.call('anvil_reorg', [depth, replacements.map((r) => [r.transaction, r.blockOffset])])
        return latestBlock()
      }),
    pending: () => pending.snapshot(),
    stop: async () => {
      if (stopped) return
      stopped = true
      clearTimeout(timer)
      await mining
      await pending.stop()
      await server.close()
      upstream.close()
      await anvil.stop()
    },
  }
}
