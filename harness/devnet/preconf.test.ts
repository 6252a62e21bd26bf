import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  divergedLogs,
  divergenceOf,
  firstCreationIndex,
  matchesFilter,
  mergeCanonicalAndPending,
  nextBlockTimestamp,
  poolKey,
  preconfirmedLogs,
  shuffled,
  simulationParams,
  takeNewLogs,
  ZERO_HASH,
  type PendingBlock,
  type PreconfLog,
  type PendingTransaction,
} from './preconf.js'

const A = '0x00000000000000000000000000000000000000aa' as const
const B = '0x00000000000000000000000000000000000000bb' as const
const T0 = `0x${'01'.repeat(32)}` as const
const T1 = `0x${'02'.repeat(32)}` as const
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as const

const tx = (n: number, overrides: Partial<PendingTransaction> = {}): PendingTransaction => ({
  hash: hash(n),
  from: A,
  to: B,
  input: '0x',
  value: '0x0',
  gas: '0x5208',
  nonce: `0x${n.toString(16)}`,
  maxFeePerGas: '0x10',
  maxPriorityFeePerGas: '0x1',
  ...overrides,
})

const block = (transactions: PendingTransaction[]): PendingBlock => ({
  number: '0x10',
  parentHash: hash(99),
  timestamp: '0x64',
  gasLimit: '0x1c9c380',
  miner: '0x0000000000000000000000000000000000000000',
  baseFeePerGas: '0x7',
  transactions,
})

const call = (logs: Array<{ address: `0x${string}`; topics: `0x${string}`[]; data: `0x${string}` }>, status: `0x${string}` = '0x1') => ({
  status,
  logs,
})

describe('preconfirmedLogs', () => {
  it('stamps logs like a Base pre-confirmation: zero hash, pending number and time, cumulative logIndex', () => {
    const logs = preconfirmedLogs(block([tx(1), tx(2), tx(3)]), [
      call([
        { address: A, topics: [T0], data: '0x01' },
        { address: B, topics: [], data: '0x02' },
      ]),
      call([]),
      call([{ address: A, topics: [T1], data: '0x03' }]),
    ])
    expect(logs.map((log) => [log.transactionHash, log.transactionIndex, log.logIndex, log.data])).toEqual([
      [hash(1), '0x0', '0x0', '0x01'],
      [hash(1), '0x0', '0x1', '0x02'],
      [hash(3), '0x2', '0x2', '0x03'],
    ])
    expect(logs.every((log) => log.blockHash === ZERO_HASH && log.blockNumber === '0x10' && log.blockTimestamp === '0x64')).toBe(true)
    expect(logs.every((log) => log.removed === false)).toBe(true)
  })

  it('leaves out the logs of a reverted call', () => {
    const logs = preconfirmedLogs(block([tx(1), tx(2)]), [
      call([{ address: A, topics: [], data: '0x01' }], '0x0'),
      call([{ address: A, topics: [], data: '0x02' }]),
    ])
    expect(logs.map((log) => [log.transactionIndex, log.logIndex])).toEqual([['0x1', '0x0']])
  })
})

describe('simulationParams', () => {
  it('replays the pool as the pending block on top of its parent, with each transaction’s fee fields', () => {
    const [options, parent] = simulationParams(block([]), [
      tx(1, { accessList: [] }),
      tx(2, { maxFeePerGas: undefined, maxPriorityFeePerGas: undefined, gasPrice: '0x20', to: null }),
    ]) as [{ blockStateCalls: Array<{ blockOverrides: object; calls: object[] }>; validation: boolean }, string]
    expect(parent).toBe(hash(99))
    expect(options.validation).toBe(true)
    expect(options.blockStateCalls[0]!.blockOverrides).toEqual({
      number: '0x10',
      time: '0x64',
      gasLimit: '0x1c9c380',
      feeRecipient: '0x0000000000000000000000000000000000000000',
      baseFeePerGas: '0x7',
    })
    expect(options.blockStateCalls[0]!.calls).toEqual([
      { from: A, to: B, input: '0x', value: '0x0', gas: '0x5208', nonce: '0x1', maxFeePerGas: '0x10', maxPriorityFeePerGas: '0x1' },
      { from: A, input: '0x', value: '0x0', gas: '0x5208', nonce: '0x2', gasPrice: '0x20' },
    ])
  })

  it('finds the first contract creation', () => {
    expect(firstCreationIndex([tx(1), tx(2, { to: null }), tx(3, { to: null })])).toBe(1)
    expect(firstCreationIndex([tx(1)])).toBe(-1)
  })
})

describe('matchesFilter', () => {
  const log = { address: A, topics: [T0, T1] as `0x${string}`[] }

  it('matches any listed address, in any letter case', () => {
    expect(matchesFilter(log, { address: A.toUpperCase().replace('0X', '0x') as `0x${string}` })).toBe(true)
    expect(matchesFilter(log, { address: [B, A] })).toBe(true)
    expect(matchesFilter(log, { address: B })).toBe(false)
    expect(matchesFilter(log, { address: [] })).toBe(true)
  })

  it('matches topics by position: a value, any of a list, or null for any', () => {
    expect(matchesFilter(log, { topics: [T0] })).toBe(true)
    expect(matchesFilter(log, { topics: [null, T1] })).toBe(true)
    expect(matchesFilter(log, { topics: [[T1, T0], [T1]] })).toBe(true)
    expect(matchesFilter(log, { topics: [T1] })).toBe(false)
    expect(matchesFilter(log, { topics: [] })).toBe(true)
  })

  it('never matches a log with fewer topics than the filter has positions, as geth', () => {
    expect(matchesFilter(log, { topics: [T0, null, null] })).toBe(false)
  })
})

describe('nextBlockTimestamp', () => {
  it('is the expected mining time, and always after the parent', () => {
    expect(nextBlockTimestamp({ parentTimestamp: 100n, nowMs: 100_500, blockTimeMs: 2_000 })).toBe(102n)
    expect(nextBlockTimestamp({ parentTimestamp: 100n, nowMs: 100_500, blockTimeMs: 0 })).toBe(101n)
    expect(nextBlockTimestamp({ parentTimestamp: 100n, nowMs: 150_000, blockTimeMs: 0 })).toBe(150n)
  })
})

describe('poolKey', () => {
  it('depends on the head and the executable pool, not on the order txpool_content lists it', () => {
    const pool = (entries: Array<[string, string, number]>) => ({
      pending: Object.fromEntries(entries.map(([from, nonce, n]) => [from, { [nonce]: { hash: hash(n) } }])),
      queued: { [B]: { '9': { hash: hash(9) } } },
    })
    const key = poolKey(
      hash(1),
      pool([
        [A, '0', 1],
        [B, '0', 2],
      ]),
    )
    expect(
      poolKey(
        hash(1),
        pool([
          [B, '0', 2],
          [A, '0', 1],
        ]),
      ),
    ).toBe(key)
    expect(
      poolKey(
        hash(2),
        pool([
          [A, '0', 1],
          [B, '0', 2],
        ]),
      ),
    ).not.toBe(key)
    expect(poolKey(hash(1), pool([[A, '0', 1]]))).not.toBe(key)
  })
})

describe('takeNewLogs', () => {
  it('yields each log of a pending block once, however often the block is served', () => {
    const first = preconfirmedLogs(block([tx(1)]), [call([{ address: A, topics: [], data: '0x01' }])])
    const second = preconfirmedLogs(block([tx(2), tx(1)]), [
      call([{ address: A, topics: [], data: '0x02' }]),
      call([
        { address: A, topics: [], data: '0x01' },
        { address: A, topics: [], data: '0x03' },
      ]),
    ])
    const seen = new Set<string>()
    expect(takeNewLogs(first, seen).map((log) => log.data)).toEqual(['0x01'])
    expect(takeNewLogs(second, seen).map((log) => log.data)).toEqual(['0x02', '0x03'])
    expect(takeNewLogs(second, seen)).toEqual([])
  })
})

describe('shuffled', () => {
  it('is a permutation of its input', () => {
    fc.assert(
      fc.property(fc.array(fc.integer()), (items) => {
        const result = shuffled(items)
        expect([...result].sort((a, b) => a - b)).toEqual([...items].sort((a, b) => a - b))
      }),
    )
  })
})

describe('divergenceOf', () => {
  it('chooses by hash 3/4 of the rate, a third of them to swap places, so about the rate of transactions diverge', () => {
    const picks = Array.from({ length: 6_000 }, (_, n) => divergenceOf(hash(n), 0.2))
    const data = picks.filter((pick) => pick === 'data').length
    const position = picks.filter((pick) => pick === 'position').length
    expect((data + position) / picks.length).toBeGreaterThan(0.13)
    expect((data + position) / picks.length).toBeLessThan(0.17)
    expect(position / (data + position)).toBeGreaterThan(0.28)
    expect(position / (data + position)).toBeLessThan(0.39)
    // Each swap makes two transactions diverge.
    expect((data + 2 * position) / picks.length).toBeGreaterThan(0.17)
    expect((data + 2 * position) / picks.length).toBeLessThan(0.23)
    expect(
      picks
        .slice(0, 100)
        .map((_, n) => divergenceOf(hash(n), 0))
        .every((pick) => pick === undefined),
    ).toBe(true)
    expect(divergenceOf(hash(1), 0.2)).toBe(divergenceOf(hash(1), 0.2))
  })
})

describe('divergedLogs', () => {
  const find = (kind: 'data' | 'position' | undefined, after = 0) => {
    for (let n = after + 1; ; n++) if (divergenceOf(hash(n), 0.5) === kind) return n
  }
  const windowLogs = (blocks: number[][]): PreconfLog[] =>
    blocks.flatMap((txs, b) => {
      const calls = txs.map((n) =>
        call([
          { address: A, topics: [T0], data: `0x0${n % 10}` as const },
          { address: B, topics: [], data: '0x' as const },
        ]),
      )
      return preconfirmedLogs({ ...block(txs.map((n) => tx(n))), number: `0x${(16 + b).toString(16)}` }, calls)
    })
  const row = (log: PreconfLog) => [log.blockNumber, log.transactionHash, log.transactionIndex, log.logIndex, log.data]
  const flipped = (n: number) => `0x${(0xff ^ (n % 10)).toString(16)}`

  it('changes the data of one kind of chosen transaction and swaps the other with the next one, logIndex still cumulative', () => {
    const moved = find('position')
    const same = find(undefined)
    const data = find('data')
    const other = find(undefined, same)
    const logs = windowLogs([[moved, same, data], [other]])
    expect(divergedLogs(logs, 0.5).map(row)).toEqual([
      ['0x10', hash(same), '0x0', '0x0', `0x0${same % 10}`],
      ['0x10', hash(same), '0x0', '0x1', '0x'],
      ['0x10', hash(moved), '0x1', '0x2', `0x0${moved % 10}`],
      ['0x10', hash(moved), '0x1', '0x3', '0x'],
      ['0x10', hash(data), '0x2', '0x4', flipped(data)],
      ['0x10', hash(data), '0x2', '0x5', '0xff'],
      ['0x11', hash(other), '0x0', '0x0', `0x0${other % 10}`],
      ['0x11', hash(other), '0x0', '0x1', '0x'],
    ])
    expect(divergedLogs(logs, 0)).toEqual(logs)
  })

  it('swaps the last transaction of a block with the one before, and changes the data of a lone one', () => {
    const same = find(undefined)
    const moved = find('position')
    const lone = find('position', moved)
    expect(divergedLogs(windowLogs([[same, moved], [lone]]), 0.5).map((log) => row(log).slice(1, 4))).toEqual([
      [hash(moved), '0x0', '0x0'],
      [hash(moved), '0x0', '0x1'],
      [hash(same), '0x1', '0x2'],
      [hash(same), '0x1', '0x3'],
      [hash(lone), '0x0', '0x0'],
      [hash(lone), '0x0', '0x1'],
    ])
    expect(divergedLogs(windowLogs([[lone]]), 0.5).map((log) => log.data)).toEqual([flipped(lone), '0xff'])
  })
})

describe('mergeCanonicalAndPending', () => {
  it('keeps every canonical log and the pending ones at a (block, logIndex) no canonical log has', () => {
    const log = (blockNumber: `0x${string}`, logIndex: `0x${string}`, source: string) => ({ blockNumber, logIndex, source })
    const canonical = [log('0x10', '0x0', 'c'), log('0x11', '0x0', 'c')]
    const pending = [log('0x11', '0x0', 'p'), log('0x11', '0x1', 'p'), log('0x12', '0x0', 'p')]
    expect(mergeCanonicalAndPending(canonical, pending)).toEqual([...canonical, pending[1], pending[2]])
  })
})
