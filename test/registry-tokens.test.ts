import fc from 'fast-check'
import { encodeAbiParameters, toEventSelector } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builderCodesRegistryAbi } from '../src/attribution/registry.js'
import { applyReorg, orphanBlocks } from '../src/reorg/index.js'
import { insertCanonicalLogs, saveBuilderCodeRegistry, upsertPendingLogs, withTransaction, type LogRow } from '../src/store/index.js'
import { toCopyData } from '../src/store/logRows.js'
import { replayRegistry, type RegistryRow } from './helpers/registry.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const REGISTRY = '0x00000000000000000000000000000000000b0c0d'
const OTHER_CONTRACT = '0x00000000000000000000000000000000000e0e0e'
const [CODE_REGISTERED, PAYOUT_UPDATED, TRANSFER] = builderCodesRegistryAbi.map((event) => toEventSelector(event)) as [
  string,
  string,
  string,
]
const ZERO_ADDRESS = `0x${'0'.repeat(40)}`
/** Valid codes, and one the registry's decoding refuses (upper case and a dash). */
const CODES = ['bc_alpha', 'bc_beta', 'gamma_9', 'Bad-Code']
const T0 = Date.UTC(2026, 10, 1) / 1000

const word = (n: bigint | number) => `0x${BigInt(n).toString(16).padStart(64, '0')}`
const address = (n: number) => (n === 0 ? ZERO_ADDRESS : `0x${n.toString(16).padStart(40, 'a')}`)
const topicOfAddress = (a: string) => `0x${a.slice(2).padStart(64, '0')}`
/** Token ids as the registry mints them: large uint256 values, so their topics need all 64 digits. */
const tokenTopic = (token: number) => word((1n << 255n) + BigInt(token) * 0x1234567n)

type Event =
  | { kind: 'register'; token: number; code: number }
  | { kind: 'payout'; token: number; to: number }
  | { kind: 'transfer'; token: number; from: number; to: number }

function eventLog(event: Event, contract: string): Pick<LogRow, 'address' | 'topics' | 'data'> {
  const token = tokenTopic(event.token)
  switch (event.kind) {
    case 'register':
      return { address: contract, topics: [CODE_REGISTERED, token], data: encodeAbiParameters([{ type: 'string' }], [CODES[event.code]!]) }
    case 'payout':
      return {
        address: contract,
        topics: [PAYOUT_UPDATED, token],
        data: encodeAbiParameters([{ type: 'address' }], [address(event.to) as `0x${string}`]),
      }
    case 'transfer':
      return {
        address: contract,
        topics: [TRANSFER, topicOfAddress(address(event.from)), topicOfAddress(address(event.to)), token],
        data: '0x',
      }
  }
}

let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

async function registryCodes(): Promise<RegistryRow[]> {
  const { rows } = await db.store.pool.query<RegistryRow>(
    `SELECT token_id::text, builder_code, owner, payout_address, registered_block::text FROM registry_codes WHERE chain_id = $1 ORDER BY token_id::text`,
    [CHAIN_ID],
  )
  return rows
}

async function replayOfLiveLogs(): Promise<RegistryRow[]> {
  const { rows } = await db.store.pool.query<{ topics: string[]; data: string; block_number: string }>(
    `SELECT array_remove(ARRAY[topic0, topic1, topic2, topic3], NULL) AS topics, data, block_number::text FROM logs
     WHERE chain_id = $1 AND address = $2 AND NOT removed ORDER BY logs.block_number, logs.log_index`,
    [CHAIN_ID, REGISTRY],
  )
  return replayRegistry(rows)
}

/** A chain of blocks written by the range path, with the writers' own reorg, orphan and pending paths. */
class Chain {
  head = 0
  fork = 0
  tx = 0
  /** Every canonical block written, by hash, with its rows (to write a removed block again). */
  blocks = new Map<string, { number: number; rows: LogRow[] }>()
  pending: LogRow[] = []

  row(number: number, hash: string, logIndex: number, event: Event, contract = REGISTRY): LogRow {
    this.tx += 1
    return {
      blockNumber: number,
      blockHash: hash,
      blockTimestamp: T0 + number * 2,
      transactionHash: word(this.tx),
      transactionIndex: logIndex,
      logIndex,
      txLogOrdinal: 0,
      ...eventLog(event, contract),
    }
  }

  async block(events: { event: Event; foreign: boolean }[]) {
    const number = ++this.head
    const hash = word(BigInt(number) * 1000n + BigInt(this.fork))
    const rows = events.map(({ event, foreign }, i) => this.row(number, hash, i, event, foreign ? OTHER_CONTRACT : REGISTRY))
    this.blocks.set(hash, { number, rows })
    await this.write(rows)
  }

  async write(rows: LogRow[]) {
    await withTransaction(db.store.pool, (client) =>
      insertCanonicalLogs(
        client,
        toCopyData(rows, CHAIN_ID, () => 'confirmed'),
      ),
    )
  }

  async reorg(back: number) {
    const fork = Math.max(0, this.head - back)
    this.fork += 1
    await applyReorg(db.store.pool, {
      chainId: CHAIN_ID,
      followerFilterId: 'all',
      forkBlock: { number: fork, hash: word(fork) },
      depth: this.head - fork,
      oldHash: 'x',
      newHash: 'y',
    })
    this.head = fork
  }

  async orphan(pick: number) {
    const { rows } = await db.store.pool.query<{ number: string; hash: string }>(
      `SELECT DISTINCT block_number::text AS number, block_hash AS hash FROM logs WHERE chain_id = $1 AND status <> 'pending' AND NOT removed ORDER BY 1, 2`,
      [CHAIN_ID],
    )
    const block = rows[pick % Math.max(1, rows.length)]
    if (block !== undefined) await orphanBlocks(db.store.pool, CHAIN_ID, [{ number: Number(block.number), hash: block.hash }])
  }

  /** A removed block read again (a repair, or the block coming back): its rows are live again. */
  async restore(pick: number) {
    const { rows } = await db.store.pool.query<{ hash: string }>(
      `SELECT DISTINCT block_hash AS hash FROM logs WHERE chain_id = $1 AND status <> 'pending' AND removed ORDER BY 1`,
      [CHAIN_ID],
    )
    const block = rows[pick % Math.max(1, rows.length)]
    if (block !== undefined) await this.write(this.blocks.get(block.hash)!.rows)
  }

  /** A pre-confirmed log, or one already seen moving to a later block (same transaction and ordinal). */
  async preconfirmed(event: Event, move: number) {
    const moved = this.pending[move % Math.max(1, this.pending.length)]
    const number = this.head + 1 + (move % 2)
    const row =
      moved !== undefined && move % 3 === 0
        ? { ...moved, blockNumber: number, blockTimestamp: T0 + number * 2 }
        : { ...this.row(number, `0x${'0'.repeat(64)}`, 0, event), logIndex: 500 + this.tx }
    if (row !== moved) this.pending.push(row)
    await upsertPendingLogs(db.store.pool, CHAIN_ID, [row])
  }
}

const token = fc.integer({ min: 0, max: 3 })
const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constant('register' as const), token, code: fc.integer({ min: 0, max: CODES.length - 1 }) }),
  fc.record({ kind: fc.constant('payout' as const), token, to: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('transfer' as const), token, from: fc.integer({ min: 0, max: 3 }), to: fc.integer({ min: 0, max: 3 }) }),
)
type Step =
  | { kind: 'block'; events: { event: Event; foreign: boolean }[] }
  | { kind: 'reorg'; back: number }
  | { kind: 'orphan'; pick: number }
  | { kind: 'restore'; pick: number }
  | { kind: 'pending'; event: Event; move: number }
const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('block' as const),
      events: fc.array(fc.record({ event: eventArbitrary, foreign: fc.boolean() }), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reorg' as const), back: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('orphan' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restore' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pending' as const), event: eventArbitrary, move: fc.nat() }) },
)

async function reset() {
  await db.store.pool.query('TRUNCATE logs, chain_state, reorgs')
  await db.store.pool.query('DELETE FROM builder_code_registries')
  await saveBuilderCodeRegistry(db.store.pool, { chainId: CHAIN_ID, address: REGISTRY, startBlock: 0 })
}

describe('registry_tokens', () => {
  it('a reorg that removes a registration takes its row back, and a removed payout change restores the one before', async () => {
    await reset()
    const chain = new Chain()
    await chain.block([{ event: { kind: 'register', token: 1, code: 0 }, foreign: false }])
    await chain.block([{ event: { kind: 'payout', token: 1, to: 1 }, foreign: false }])
    await chain.block([
      { event: { kind: 'payout', token: 1, to: 2 }, foreign: false },
      { event: { kind: 'register', token: 2, code: 1 }, foreign: false },
    ])
    expect((await registryCodes()).map((row) => [row.builder_code, row.payout_address])).toEqual([
      ['bc_alpha', address(2)],
      ['bc_beta', null],
    ])
    await chain.reorg(1)
    expect((await registryCodes()).map((row) => [row.builder_code, row.payout_address])).toEqual([['bc_alpha', address(1)]])
    expect(await registryCodes()).toEqual(await replayOfLiveLogs())
  })

  it('equals a replay of the live registry logs after random registrations, payouts, transfers, reorgs, orphans and pending moves', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArbitrary, { minLength: 1, maxLength: 24 }), async (steps) => {
        await reset()
        const chain = new Chain()
        for (const step of steps) {
          if (step.kind === 'block') await chain.block(step.events)
          else if (step.kind === 'reorg') await chain.reorg(step.back)
          else if (step.kind === 'orphan') await chain.orphan(step.pick)
          else if (step.kind === 'restore') await chain.restore(step.pick)
          else await chain.preconfirmed(step.event, step.move)
        }
        expect(await registryCodes()).toEqual(await replayOfLiveLogs())
      }),
      { numRuns: 60 },
    )
  })

  it('fills the codes of logs stored before their registry was configured, and forgets them with it', async () => {
    await reset()
    await db.store.pool.query('DELETE FROM builder_code_registries')
    const chain = new Chain()
    await chain.block([
      { event: { kind: 'register', token: 3, code: 2 }, foreign: false },
      { event: { kind: 'transfer', token: 3, from: 0, to: 2 }, foreign: false },
    ])
    expect(await registryCodes()).toEqual([])
    await saveBuilderCodeRegistry(db.store.pool, { chainId: CHAIN_ID, address: REGISTRY, startBlock: 0 })
    expect(await registryCodes()).toEqual([
      {
        token_id: BigInt(tokenTopic(3)).toString(),
        builder_code: 'gamma_9',
        owner: address(2),
        payout_address: null,
        registered_block: '1',
      },
    ])
    await db.store.pool.query('DELETE FROM builder_code_registries')
    expect(await registryCodes()).toEqual([])
  })
})
