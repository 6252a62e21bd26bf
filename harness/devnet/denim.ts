import { LRUCache } from 'lru-cache'
import { concat, keccak256, numberToHex, toRlp, type Address, type Hex } from 'viem'
import type { Logger } from '../../src/internal/logger.js'
import type { HeadBlock } from './pendingState.js'
import type { UpstreamClient } from './rpc.js'

/** Base's block time since Denim. */
export const DENIM_BLOCK_TIME_MS = 200

/** The L1-attributes depositor, sender of Base's system deposits. */
export const DEPOSITOR: Address = '0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001'
/** Targets of the two deposits that open every Base block: L1 attributes, then BaseTime. */
export const SYSTEM_DEPOSIT_TARGETS: readonly Address[] = [
  '0x4200000000000000000000000000000000000015',
  '0x4200000000000000000000000000000000000030',
]
const L1_ATTRIBUTES_SELECTOR: Hex = '0x440a5e20'
const DEPOSIT_GAS = 1_000_000

/** Block hashes whose `timestampMs` the layer remembers: hours of blocks at 5 a second. */
const MS_CACHE_BLOCKS = 200_000

/** What `anvil_reorg` takes per replacement transaction: raw signed bytes or a request, and its block offset. */
export type Replacement = { transaction: Hex | Record<string, unknown>; blockOffset: number }

export type DenimChainParameters = {
  upstream: UpstreamClient
  logger: Logger
  /** Interval mining (> 0) stamps blocks with the wall clock; manual mining steps the clock by 200 ms a block. */
  blockTimeMs: number
  /** Open every block with the two system deposits (anvil runs with `--network optimism --order fifo`). */
  deposits: boolean
}

/** The chain behind the `base` profile: mines with Denim timestamps and system deposits, remembers each block's ms. */
export type DenimChain = {
  /** Mines a block; `timestampMs` (kept above the parent's) stamps it instead of the profile's clock. */
  mine: (timestampMs?: number) => Promise<HeadBlock>
  /** Rolls back `depth` blocks and mines as many in their place, with the replacements at their offsets. */
  reorg: (depth: number, replacements: Replacement[]) => Promise<HeadBlock>
  /** Runs another chain-changing call exclusively, then picks up the head it left. */
  changeChain: <T>(operation: () => Promise<T>) => Promise<T>
  /** Runs a transaction submission; none is in flight while a block is mined and the next deposits are queued. */
  submit: <T>(operation: () => Promise<T>) => Promise<T>
  /** The signed bytes of a system deposit the layer made (anvil 1.7 panics encoding a mined 0x7e); undefined for others. */
  rawDeposit: (hash: Hex) => Hex | undefined
  /** Adds `timestampMs`/`blockTimestampMs` to an answer of `method`. */
  decorate: (method: string, result: unknown) => Promise<unknown>
  /** The head as of the last mine. */
  head: () => HeadBlock
  onHead: (listener: (head: HeadBlock & { timestampMs: Hex }) => void) => void
  start: () => Promise<void>
}

const hex = (n: number | bigint): Hex => `0x${n.toString(16)}`

type PoolContent = Record<'pending' | 'queued', Record<string, Record<string, { hash: Hex; type?: Hex }>>>

type Stamped = { blockHash?: Hex | null; hash?: Hex | null }
type Receipt = Stamped & { logs?: Stamped[] }
type Block = { hash?: Hex | null; transactions?: unknown[] }

/** Methods whose answers carry blocks, transactions, receipts or logs. */
export const STAMPED_METHODS = new Set([
  'eth_getLogs',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getTransactionByHash',
  'eth_getTransactionReceipt',
  'eth_getBlockReceipts',
])

export function createDenimChain(parameters: DenimChainParameters): DenimChain {
  const { upstream, logger, blockTimeMs, deposits } = parameters
  const msByHash = new LRUCache<string, number>({ max: MS_CACHE_BLOCKS })
  const depositRaws = new LRUCache<string, Hex>({ max: MS_CACHE_BLOCKS * SYSTEM_DEPOSIT_TARGETS.length })
  const headListeners: Array<(head: HeadBlock & { timestampMs: Hex }) => void> = []
  let head: HeadBlock | undefined

  // Chain changes run one at a time and wait for submissions in flight, so queued deposits lead the next block.
  let tail: Promise<unknown> = Promise.resolve()
  let closed: Promise<unknown> | undefined
  let submitting = 0
  const drained: Array<() => void> = []
  const exclusive = <T>(operation: () => Promise<T>): Promise<T> => {
    const run = tail.then(async () => {
      closed = run
      if (submitting > 0) await new Promise<void>((resolve) => drained.push(resolve))
      try {
        return await operation()
      } finally {
        closed = undefined
      }
    })
    tail = run.catch(() => undefined)
    return run
  }
  const submit = async <T>(operation: () => Promise<T>): Promise<T> => {
    while (closed) await closed.catch(() => undefined)
    submitting++
    try {
      return await operation()
    } finally {
      if (--submitting === 0) for (const resolve of drained.splice(0)) resolve()
    }
  }

  const msOf = (hash: Hex | null | undefined): number | undefined => (hash ? msByHash.get(hash.toLowerCase()) : undefined)

  const latest = () => upstream.call<HeadBlock>('eth_getBlockByNumber', ['latest', false])

  /** A block the layer did not mine (genesis, or one mined around it): its whole seconds, as the node has nothing finer. */
  const learn = async (hashes: Hex[]) => {
    const unknown = [...new Set(hashes.map((h) => h.toLowerCase()))].filter((h) => !msByHash.has(h))
    if (unknown.length === 0) return
    const blocks = await upstream.batch(unknown.map((h) => ({ method: 'eth_getBlockByHash', params: [h, false] })))
    blocks.forEach((block) => {
      const found = block as HeadBlock | null
      if (found) msByHash.set(found.hash.toLowerCase(), Number(BigInt(found.timestamp)) * 1000)
    })
  }

  const stageDeposits = async (parent: HeadBlock) => {
    if (!deposits) return
    const number = BigInt(parent.number) + 1n
    const requests = SYSTEM_DEPOSIT_TARGETS.map((to, index) => ({
      from: DEPOSITOR,
      to,
      // Unique per parent, so a block replaced by a reorg gets deposits with other hashes.
      sourceHash: keccak256(concat([parent.hash, numberToHex(index, { size: 1 })])),
      mint: '0x0',
      value: '0x0',
      gas: numberToHex(DEPOSIT_GAS),
      isSystemTx: false,
      input: index === 0 ? concat([L1_ATTRIBUTES_SELECTOR, numberToHex(number, { size: 32 })]) : numberToHex(number, { size: 32 }),
    }))
    const hashes = (await upstream.batch(requests.map((request) => ({ method: 'eth_sendTransaction', params: [request] })))) as Hex[]
    requests.forEach((r, index) => {
      // The deposit envelope: 0x7e ‖ rlp([sourceHash, from, to, mint, value, gas, isSystemTx, data]).
      const raw = concat(['0x7e', toRlp([r.sourceHash, r.from, r.to, '0x', '0x', r.gas, '0x', r.input])])
      if (hashes[index]) depositRaws.set(hashes[index].toLowerCase(), raw)
    })
  }

  const adopt = (block: HeadBlock, ms: number) => {
    msByHash.set(block.hash.toLowerCase(), ms)
    head = block
    const { transactions: _transactions, ...header } = block
    for (const listener of headListeners) listener({ ...header, timestampMs: hex(ms) } as HeadBlock & { timestampMs: Hex })
  }

  const nextMs = (requested?: number) => {
    const previous = msOf(head?.hash) ?? Date.now()
    if (requested !== undefined) return Math.max(previous + 1, Math.floor(requested))
    return blockTimeMs > 0 ? Math.max(previous + 1, Date.now()) : previous + DENIM_BLOCK_TIME_MS
  }

  const mineOne = async (requested?: number) => {
    const ms = nextMs(requested)
    // Whole seconds repeat while ms stays in one second: about five blocks share a timestamp.
    await upstream.call('evm_mine', [Math.floor(ms / 1000)])
    const block = await latest()
    adopt(block, ms)
    await stageDeposits(block)
    return block
  }

  const resync = async () => {
    const block = await latest()
    await learn([block.hash])
    head = block
    if (deposits) {
      const pool = await upstream.call<PoolContent>('txpool_content')
      const queued = Object.values(pool.pending).flatMap((byNonce) => Object.values(byNonce))
      if (!queued.some((tx) => tx.type === '0x7e')) await stageDeposits(block)
    }
  }

  const reorg = async (depth: number, replacements: Replacement[]) => {
    if (!Number.isInteger(depth) || depth < 1 || BigInt(depth) > BigInt(head?.number ?? '0x0')) {
      throw new RangeError(`reorg depth must be a whole number from 1 to the head's number, got ${depth}`)
    }
    // The pool is set aside so the replacement blocks hold only their deposits and replacements, as anvil_reorg does.
    const pool = await upstream.call<PoolContent>('txpool_content')
    const waiting = [...Object.values(pool.pending), ...Object.values(pool.queued)]
      .flatMap((byNonce) => Object.values(byNonce))
      .filter((tx) => tx.type !== '0x7e')
      .map((tx) => tx.hash)
    const raws =
      waiting.length > 0
        ? ((await upstream.batch(waiting.map((h) => ({ method: 'eth_getRawTransactionByHash', params: [h] })))) as Array<Hex | null>)
        : []
    await upstream.call('anvil_dropAllTransactions')
    await upstream.call('anvil_rollback', [depth])
    head = await latest()
    await learn([head.hash])
    let block = head
    for (let offset = 0; offset < depth; offset++) {
      if (deposits) await stageDeposits(block)
      for (const { transaction } of replacements.filter((r) => r.blockOffset === offset)) {
        // Each block gets deposits of its own: replayed ones would follow them.
        if (typeof transaction === 'string' && transaction.startsWith('0x7e')) continue
        // One that no longer fits the chain (a nonce already used above the fork) stays out rather than undo the reorg half-way.
        await (typeof transaction === 'string'
          ? upstream.call('eth_sendRawTransaction', [transaction])
          : upstream.call('eth_sendTransaction', [transaction])
        ).catch((error: unknown) => logger.warn({ err: error, block_offset: offset }, 'devnet reorg left out a replacement transaction'))
      }
      const ms = nextMs()
      await upstream.call('evm_mine', [Math.floor(ms / 1000)])
      block = await latest()
      adopt(block, ms)
    }
    await stageDeposits(block)
    for (const raw of raws) {
      if (!raw) continue
      // A pool transaction that needed an orphaned one stays out, as on a node.
      await upstream
        .call('eth_sendRawTransaction', [raw])
        .catch((error: unknown) => logger.debug({ err: error }, 'devnet could not requeue a pool transaction'))
    }
    return block
  }

  const stamp = <T extends Stamped>(item: T, hash: Hex | null | undefined): T => {
    const ms = msOf(hash)
    return ms === undefined ? item : { ...item, blockTimestampMs: hex(ms) }
  }
  const stampReceipt = (receipt: Receipt | null) =>
    receipt && {
      ...stamp(receipt, receipt.blockHash),
      ...(receipt.logs ? { logs: receipt.logs.map((log) => stamp(log, log.blockHash)) } : {}),
    }

  const hashesIn = (method: string, result: unknown): Hex[] => {
    if (!result || typeof result !== 'object') return []
    const items = Array.isArray(result) ? (result as Stamped[]) : [result as Stamped]
    return items.flatMap((item) => {
      const hash = method.startsWith('eth_getBlockBy') ? item.hash : item.blockHash
      return hash ? [hash] : []
    })
  }

  const decorate = async (method: string, result: unknown): Promise<unknown> => {
    if (!result || typeof result !== 'object') return result
    await learn(hashesIn(method, result))
    switch (method) {
      case 'eth_getLogs':
        return (result as Stamped[]).map((log) => stamp(log, log.blockHash))
      case 'eth_getBlockByNumber':
      case 'eth_getBlockByHash': {
        const block = result as Block
        const ms = msOf(block.hash)
        if (ms === undefined) return block
        const transactions = block.transactions?.map((tx) => (typeof tx === 'object' && tx ? stamp(tx as Stamped, block.hash) : tx))
        return { ...block, timestampMs: hex(ms), ...(transactions ? { transactions } : {}) }
      }
      case 'eth_getTransactionByHash':
        return stamp(result as Stamped, (result as Stamped).blockHash)
      case 'eth_getTransactionReceipt':
        return stampReceipt(result as Receipt)
      case 'eth_getBlockReceipts':
        return (result as Receipt[]).map(stampReceipt)
      default:
        return result
    }
  }

  return {
    mine: (timestampMs) => exclusive(() => mineOne(timestampMs)),
    reorg: (depth, replacements) => exclusive(() => reorg(depth, replacements)),
    changeChain: (operation) =>
      exclusive(async () => {
        try {
          return await operation()
        } finally {
          await resync().catch((error: unknown) => logger.warn({ err: error }, 'devnet could not pick up the head after a chain change'))
        }
      }),
    submit,
    rawDeposit: (hash) => depositRaws.get(hash.toLowerCase()),
    decorate,
    head: () => {
      if (!head) throw new Error('the devnet chain has not started')
      return head
    },
    onHead: (listener) => void headListeners.push(listener),
    start: () =>
      exclusive(async () => {
        const block = await latest()
        await learn([block.hash])
        head = block
        await stageDeposits(block)
      }),
  }
}
