import type { Hex } from 'viem'
import { silentLogger, type Logger } from '../../src/internal/logger.js'
import { startAnvil, type Anvil, type AnvilOptions } from './anvil.js'
import { createDenimChain, DENIM_BLOCK_TIME_MS, type DenimChain } from './denim.js'
import { checkWindowOptions, createPendingState, type HeadBlock, type PendingSnapshot } from './pendingState.js'
import { createUpstreamClient } from './rpc.js'
import { startDevnetServer, type DevnetCalls } from './server.js'

export { freePort, startAnvil, type Anvil, type AnvilOptions } from './anvil.js'
export { MAX_CANONICAL_LAG, type PendingSnapshot } from './pendingState.js'
export { divergenceOf, ZERO_HASH } from './preconf.js'
export { DENIM_BLOCK_TIME_MS, DEPOSITOR, SYSTEM_DEPOSIT_TARGETS } from './denim.js'
export { DROP_TRANSACTION_METHOD, type DevnetCalls } from './server.js'

/** Block time of the `op` profile (2 s blocks pre-confirmed through `pending`). */
export const DEFAULT_BLOCK_TIME_MS = 2_000

/**
 * `base`: Base since Denim, a canonical block every 200 ms, `pending` answers like `latest`, no `pendingLogs`,
 * whole-second timestamps shared by about five blocks plus `timestampMs`/`blockTimestampMs`, two system deposits
 * leading each block. `op`: 2 s blocks with 250 ms pre-confirmations through `pending` and `pendingLogs`.
 */
export type DevnetProfile = 'base' | 'op'
export const DEVNET_PROFILES: readonly DevnetProfile[] = ['base', 'op']

export type DevnetOptions = Omit<AnvilOptions, 'port' | 'blockTime' | 'noMining'> & {
  /** @default 'base' */
  profile?: DevnetProfile
  /** Milliseconds between mined blocks; 0: only `mine()` mines. Default: 200 on `base`, 2,000 on `op`. */
  blockTimeMs?: number
  /** `base` only: open every block with the two system deposits (type 0x7e). @default true */
  deposits?: boolean
  /** Port of the pre-confirmed layer (HTTP and WebSocket); omitted: a free one. */
  port?: number
  /** Port of anvil behind it; omitted: a free one. */
  anvilPort?: number
  /** `op` only: how old a pending answer may be before the pool is looked at again. */
  refreshMs?: number
  /** `op` only: answer pending logs in no particular order, as older Base builds do. */
  shuffle?: boolean
  /** `op` only:
   * Blocks (0–5) the node's canonical chain lags the flashblocks, as a Base node's does: the last this many
   * mined blocks are served only as pending (zero block hash, no header, receipt or canonical log) until
   * that many more are mined, so the pending window spans several block numbers.
   */
  canonicalLag?: number
  /**
   * `op` only: fraction (0–1) of transactions whose pending logs differ from what is sealed (other data, or a later
   * position in their block), as about a fifth of Base's pre-confirmations did in 2026; chosen by hash.
   */
  divergence?: number
  logger?: Logger
}

export type MinedBlock = { number: bigint; hash: Hex; timestamp: bigint }

/** A transaction for `anvil_reorg`: raw signed bytes or a request from an unlocked account, and its block offset. */
export type ReorgTransaction = { transaction: Hex | Record<string, unknown>; blockOffset: number }

export type Devnet = {
  profile: DevnetProfile
  /** JSON-RPC over HTTP, shaped like the profile's chain. */
  url: string
  /** The same endpoint over WebSocket: `eth_subscribe` `newHeads`, and `pendingLogs` (delivering nothing on `base`). */
  wsUrl: string
  /** Anvil itself, without the pre-confirmed layer. */
  anvilUrl: string
  anvil: Anvil
  /** Blocks the canonical chain at `url` lags anvil's head. */
  canonicalLag: number
  /**
   * Mines the pool into a block now; with `canonicalLag` the node serves it as canonical that many blocks later.
   * On `base`, `timestampMs` (e.g. the wall clock) stamps the block instead of 200 ms after its parent.
   */
  mine: (options?: { timestampMs?: number }) => Promise<MinedBlock>
  /** Removes a pool transaction so it is never mined; true when it was in the pool. */
  dropTransaction: (hash: Hex) => Promise<boolean>
  /** Replaces the last `depth` blocks (`anvil_reorg`); orphaned transactions vanish. */
  reorg: (depth: number, replacements?: ReorgTransaction[]) => Promise<MinedBlock>
  /** The pre-confirmed state as the endpoint serves it now; on `base` the head, with no logs. */
  pending: () => Promise<PendingSnapshot>
  /** Requests and calls by method the endpoint answered so far. */
  calls: () => DevnetCalls
  stop: () => Promise<void>
}

const toMinedBlock = (block: HeadBlock): MinedBlock => ({
  number: BigInt(block.number),
  hash: block.hash,
  timestamp: BigInt(block.timestamp),
})

/**
 * Starts anvil without automine and the profile's layer in front of it, mining every `blockTimeMs`.
 *
 * @example
 * const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
 * const client = createPublicClient({ transport: http(devnet.url) })
 * // …send a transaction, read it with eth_getLogs "pending", then:
 * await devnet.mine()
 * await devnet.stop()
 */
export async function createDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const {
    profile = 'base',
    blockTimeMs,
    deposits = true,
    port,
    anvilPort,
    refreshMs,
    shuffle,
    canonicalLag = 0,
    divergence,
    logger = silentLogger,
    ...anvilOptions
  } = options
  if (!DEVNET_PROFILES.includes(profile))
    throw new RangeError(`profile must be one of ${DEVNET_PROFILES.join(', ')}, got ${String(profile)}`)
  checkWindowOptions({ canonicalLag, divergence })
  if (profile === 'base' && (canonicalLag > 0 || (divergence ?? 0) > 0 || shuffle || refreshMs !== undefined)) {
    throw new RangeError('canonicalLag, divergence, shuffle and refreshMs shape pre-confirmations: they need profile "op"')
  }
  return profile === 'base'
    ? startBase({ ...anvilOptions, blockTimeMs: blockTimeMs ?? DENIM_BLOCK_TIME_MS, deposits, port, anvilPort, logger })
    : startOp({
        ...anvilOptions,
        blockTimeMs: blockTimeMs ?? DEFAULT_BLOCK_TIME_MS,
        port,
        anvilPort,
        refreshMs,
        shuffle,
        canonicalLag,
        divergence,
        logger,
      })
}

/** Mines every `blockTimeMs` (when > 0) until stopped; `stop` waits for a mine in progress. */
function scheduleMining(blockTimeMs: number, mine: () => Promise<unknown>, logger: Logger) {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let mining: Promise<unknown> = Promise.resolve()
  if (blockTimeMs > 0) {
    let nextAt = Date.now() + blockTimeMs
    const schedule = () => {
      timer = setTimeout(
        () => {
          mining = mine()
            .catch((error: unknown) => logger.warn({ err: error }, 'devnet mining failed'))
            .finally(() => {
              nextAt = Math.max(nextAt + blockTimeMs, Date.now())
              if (!stopped) schedule()
            })
        },
        Math.max(0, nextAt - Date.now()),
      )
    }
    schedule()
  }
  return async () => {
    stopped = true
    clearTimeout(timer)
    await mining
  }
}

async function startBase(
  options: Omit<AnvilOptions, 'port' | 'blockTime' | 'noMining'> & {
    blockTimeMs: number
    deposits: boolean
    port?: number
    anvilPort?: number
    logger: Logger
  },
): Promise<Devnet> {
  const { blockTimeMs, deposits, port, anvilPort, logger, ...anvilOptions } = options
  // Deposits need anvil's OP transaction types, and arrival order so the ones queued right after a mine lead the next block.
  const extraArgs = [...(anvilOptions.extraArgs ?? []), ...(deposits ? ['--network', 'optimism', '--order', 'fifo'] : [])]
  const anvil = await startAnvil({ ...anvilOptions, extraArgs, port: anvilPort, noMining: true })
  const upstream = createUpstreamClient(anvil.url)
  let denim: DenimChain
  let server: Awaited<ReturnType<typeof startDevnetServer>>
  try {
    denim = createDenimChain({ upstream, logger, blockTimeMs, deposits })
    await denim.start()
    server = await startDevnetServer({ upstream, denim, logger, port })
  } catch (error) {
    upstream.close()
    await anvil.stop()
    throw error
  }
  const stopMining = scheduleMining(blockTimeMs, () => denim.mine(), logger)
  logger.info({ url: server.url, anvil_url: anvil.url, profile: 'base', block_time_ms: blockTimeMs, deposits }, 'devnet started')
  const head = () => {
    const block = denim.head()
    return { number: BigInt(block.number), hash: block.hash, timestamp: BigInt(block.timestamp) }
  }
  let stopped = false
  return {
    profile: 'base',
    url: server.url,
    wsUrl: server.wsUrl,
    anvilUrl: anvil.url,
    anvil,
    canonicalLag: 0,
    mine: async (mineOptions) => toMinedBlock(await denim.mine(mineOptions?.timestampMs)),
    dropTransaction: (hash) => denim.changeChain(async () => (await upstream.call<Hex | null>('anvil_dropTransaction', [hash])) !== null),
    reorg: async (depth, replacements = []) => toMinedBlock(await denim.reorg(depth, replacements)),
    pending: async () => {
      const { number, hash, timestamp } = head()
      return { latest: number, number, parentHash: hash, timestamp, transactions: [], logs: [], unsimulated: 0 }
    },
    calls: () => server.calls(),
    stop: async () => {
      if (stopped) return
      stopped = true
      await stopMining()
      await server.close()
      upstream.close()
      await anvil.stop()
    },
  }
}

async function startOp(
  options: Omit<AnvilOptions, 'port' | 'blockTime' | 'noMining'> &
    Pick<DevnetOptions, 'port' | 'anvilPort' | 'refreshMs' | 'shuffle' | 'divergence'> & {
      blockTimeMs: number
      canonicalLag: number
      logger: Logger
    },
): Promise<Devnet> {
  const { blockTimeMs, port, anvilPort, refreshMs, shuffle, canonicalLag, divergence, logger, ...anvilOptions } = options
  const anvil = await startAnvil({ ...anvilOptions, port: anvilPort, noMining: true })
  const upstream = createUpstreamClient(anvil.url)
  const pending = createPendingState({ upstream, logger, blockTimeMs, refreshMs, canonicalLag, divergence })
  const server = await startDevnetServer({ upstream, pending, logger, port, shuffle, lagging: canonicalLag > 0 }).catch(
    async (error: unknown) => {
      upstream.close()
      await anvil.stop()
      throw error
    },
  )

  const latestBlock = async () => toMinedBlock(await upstream.call<HeadBlock>('eth_getBlockByNumber', ['latest', false]))

  const mine = () =>
    pending.changeChain(async () => {
      await upstream.call('evm_mine')
      return latestBlock()
    })

  // Opens the first pending block, fixing its timestamp before anything is served or mined.
  await pending.snapshot().catch(() => undefined)
  pending.start()

  const stopMining = scheduleMining(blockTimeMs, mine, logger)
  logger.info(
    {
      url: server.url,
      anvil_url: anvil.url,
      profile: 'op',
      block_time_ms: blockTimeMs,
      canonical_lag: canonicalLag,
      divergence: divergence ?? 0,
    },
    'devnet started',
  )

  let stopped = false
  return {
    profile: 'op',
    url: server.url,
    wsUrl: server.wsUrl,
    anvilUrl: anvil.url,
    anvil,
    canonicalLag,
    mine: () => mine(),
    dropTransaction: (hash) => pending.changeChain(async () => (await upstream.call<Hex | null>('anvil_dropTransaction', [hash])) !== null),
    reorg: (depth, replacements = []) =>
      pending.changeChain(async () => {
        await upstream.call('anvil_reorg', [depth, replacements.map((r) => [r.transaction, r.blockOffset])])
        return latestBlock()
      }),
    pending: () => pending.snapshot(),
    calls: () => server.calls(),
    stop: async () => {
      if (stopped) return
      stopped = true
      await stopMining()
      await pending.stop()
      await server.close()
      upstream.close()
      await anvil.stop()
    },
  }
}
