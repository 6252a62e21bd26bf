/**
 * The bench's fixture chains, of two kinds. `logs`: Emitter calls in segments of different densities
 * (few transactions with many logs, many with few), every log shape, and an ERC-8021 suffix on every
 * fifth transaction. `blocks`: Base mainnet's density for `ATTRIBUTION_SCOPE=blocks`, 200 transactions
 * per block of which 2 % carry a suffix, half the blocks without logs. Generated once on anvil and
 * cached as an anvil state dump in `harness/bench/fixture/<name>.json`, named by the kind and the generator's
 * parameters, beside `<name>.meta.json` that says what the chain holds.
 *
 *   node --import tsx harness/bench/fixture.ts [--quick] [--blocks] [--force]
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { Attribution } from 'ox/erc8021'
import type { Hex } from 'viem'
import { startAnvil } from '../devnet/anvil.js'
import { buildChain, fixtureClient } from '../fixtures/chain.js'

export const FIXTURE_DIR = fileURLToPath(new URL('./fixture/', import.meta.url))
// Bump when the chain it builds changes for the same parameters, so stale dumps are not reused.
const GENERATOR_VERSION = 2

export type FixtureSegment = { blocks: number; txsPerBlock: number; logsPerTx: number }

export type FixtureParameters = {
  /** Built in order, `rounds` times over, with one Emitter; each block holds `txsPerBlock × logsPerTx` logs. */
  pattern: FixtureSegment[]
  rounds: number
  /** Transaction `i` of a segment carries a suffix when `i % suffixEvery === 0`. */
  suffixEvery: number
  /** Size of the pool of builder codes the suffixes cycle through. */
  codes: number
  /**
   * Empty blocks mined after the last fixture block, so that anvil's `finalized` tag (head − 64)
   * covers every fixture block, as it covers the blocks of a backfill of history.
   */
  tailBlocks?: number
}

export type FixtureSize = 'full' | 'quick'
/** `logs`: dense logs, for the backfill part; `blocks`: Base's transaction density, for `ATTRIBUTION_SCOPE=blocks`. */
export type FixtureKind = 'logs' | 'blocks'

/**
 * 25 logs per block, alternating every 500 blocks between one transaction of 25 logs and five of 5,
 * so every 1000-block chunk holds the same mix.
 */
const PATTERN: FixtureSegment[] = [
  { blocks: 500, txsPerBlock: 1, logsPerTx: 25 },
  { blocks: 500, txsPerBlock: 5, logsPerTx: 5 },
]

/**
 * Base mainnet's density: 200 transactions per block, every 50th with a suffix (2 %); 20 blocks whose
 * transactions emit no log alternate with 20 whose transactions emit 2, so blocks scope stores
 * transactions no log points to and the range job still has logs to store.
 */
const BASE_DENSITY_PATTERN: FixtureSegment[] = [
  { blocks: 20, txsPerBlock: 200, logsPerTx: 0 },
  { blocks: 20, txsPerBlock: 200, logsPerTx: 2 },
]
// anvil's `finalized` is 2 epochs of 32 slots below the head.
const FINALIZED_TAIL_BLOCKS = 64

/** The `logs` kind. */
export const FIXTURE_PARAMETERS: Record<FixtureSize, FixtureParameters> = {
  full: { pattern: PATTERN, rounds: 24, suffixEvery: 5, codes: 100 },
  quick: { pattern: PATTERN, rounds: 4, suffixEvery: 5, codes: 100 },
}

export const BLOCKS_FIXTURE_PARAMETERS: Record<FixtureSize, FixtureParameters> = {
  full: { pattern: BASE_DENSITY_PATTERN, rounds: 5, suffixEvery: 50, codes: 100, tailBlocks: FINALIZED_TAIL_BLOCKS },
  quick: { pattern: BASE_DENSITY_PATTERN, rounds: 2, suffixEvery: 50, codes: 100, tailBlocks: FINALIZED_TAIL_BLOCKS },
}

export type FixtureMeta = {
  name: string
  parameters: FixtureParameters
  chainId: number
  /** First and last block holding fixture logs; a backfill from block 0 to `toBlock` covers them all. */
  fromBlock: number
  toBlock: number
  logs: number
  /** The fixture's transactions (the Emitter's deployment not counted). */
  transactions: number
  suffixed: number
  /** Every transaction of blocks 0–`toBlock`, the Emitter's deployment included (absent from older dumps' meta). */
  blockTransactions?: number
  emitter: string
  generatedMs: number
}

export type Fixture = FixtureMeta & { statePath: string; stateBytes: number }

/** `bench_` + 3 digits: the shape of the codes Base issues (`bc_` + 8 characters). */
export function benchCode(k: number): string {
  return `bc_bench${String(k).padStart(3, '0')}`
}

/** The suffix of transaction `i` of a segment, or undefined for none. */
export function fixtureSuffix(parameters: FixtureParameters, i: number): Hex | undefined {
  if (i % parameters.suffixEvery !== 0) return undefined
  return Attribution.toDataSuffix({ codes: [benchCode((i / parameters.suffixEvery) % parameters.codes)] })
}

export function fixtureName(
  size: FixtureSize,
  parameters: FixtureParameters = FIXTURE_PARAMETERS[size],
  kind: FixtureKind = 'logs',
): string {
  const key = createHash('sha256').update(JSON.stringify({ GENERATOR_VERSION, parameters })).digest('hex').slice(0, 10)
  return `${kind === 'logs' ? '' : `${kind}-`}${size}-${key}`
}

export type EnsureFixtureParameters = {
  size: FixtureSize
  /** @default 'logs' */
  kind?: FixtureKind
  /** Regenerate even when a dump with these parameters exists. */
  force?: boolean
  /** Progress lines for the user. */
  say?: (message: string) => void
}

/** The cached fixture of `kind` and `size`, generated first when missing. */
export async function ensureFixture({ size, kind = 'logs', force = false, say = () => {} }: EnsureFixtureParameters): Promise<Fixture> {
  const parameters = (kind === 'blocks' ? BLOCKS_FIXTURE_PARAMETERS : FIXTURE_PARAMETERS)[size]
  const name = fixtureName(size, parameters, kind)
  const statePath = `${FIXTURE_DIR}${name}.json`
  const metaPath = `${FIXTURE_DIR}${name}.meta.json`
  if (!force && existsSync(statePath) && existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as FixtureMeta
    return { ...meta, statePath, stateBytes: statSync(statePath).size }
  }
  mkdirSync(FIXTURE_DIR, { recursive: true })
  const partialPath = `${FIXTURE_DIR}${name}.partial.json`
  rmSync(partialPath, { force: true })
  say(`generating fixture ${name} (cached in ${FIXTURE_DIR})…`)
  const started = performance.now()
  const anvil = await startAnvil({ dumpState: partialPath })
  let meta: FixtureMeta
  try {
    meta = await generate(anvil.url, name, parameters, say)
  } finally {
    // anvil writes the dump as it exits.
    await anvil.stop()
  }
  if (!existsSync(partialPath)) throw new Error(`anvil wrote no state dump to ${partialPath}`)
  if (anvil.process.signalCode === 'SIGKILL') throw new Error(`anvil was killed before it finished writing ${partialPath}`)
  meta.generatedMs = Math.round(performance.now() - started)
  renameSync(partialPath, statePath)
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`)
  const stateBytes = statSync(statePath).size
  say(
    `fixture ${name}: ${meta.logs} logs, ${meta.transactions} transactions in blocks ${meta.fromBlock}–${meta.toBlock}, ${(stateBytes / 2 ** 20).toFixed(0)} MiB, ${(meta.generatedMs / 1000).toFixed(1)} s`,
  )
  return { ...meta, statePath, stateBytes }
}

async function generate(rpcUrl: string, name: string, parameters: FixtureParameters, say: (message: string) => void): Promise<FixtureMeta> {
  let emitter: `0x${string}` | undefined
  let fromBlock: number | undefined
  let toBlock = 0
  let logs = 0
  let transactions = 0
  let suffixed = 0
  const segments = Array.from({ length: parameters.rounds }, () => parameters.pattern).flat()
  for (const [index, segment] of segments.entries()) {
    const chain = await buildChain(rpcUrl, {
      ...segment,
      largeDataEvery: 0,
      suffix: (i) => fixtureSuffix(parameters, i),
      ...(emitter ? { emitter } : {}),
    })
    emitter = chain.emitter
    fromBlock ??= Number(chain.fromBlock)
    toBlock = Number(chain.toBlock)
    const count = segment.blocks * segment.txsPerBlock
    transactions += count
    suffixed += Math.ceil(count / parameters.suffixEvery)
    logs += count * segment.logsPerTx
    if ((index + 1) % parameters.pattern.length === 0)
      say(`  round ${(index + 1) / parameters.pattern.length} of ${parameters.rounds} done (block ${toBlock})`)
  }
  const client = fixtureClient(rpcUrl)
  if (parameters.tailBlocks) await client.mine({ blocks: parameters.tailBlocks })
  const counts = await Promise.all(
    Array.from({ length: toBlock + 1 }, (_, n) => client.getBlockTransactionCount({ blockNumber: BigInt(n) })),
  )
  const blockTransactions = counts.reduce((sum, c) => sum + c, 0)
  const chainId = await client.getChainId()
  return {
    name,
    parameters,
    chainId,
    fromBlock: fromBlock!,
    toBlock,
    logs,
    transactions,
    suffixed,
    blockTransactions,
    emitter: emitter!,
    generatedMs: 0,
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      blocks: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
    },
    strict: true,
  })
  const fixture = await ensureFixture({
    size: values.quick ? 'quick' : 'full',
    kind: values.blocks ? 'blocks' : 'logs',
    force: values.force,
    say: (m) => process.stderr.write(`${m}\n`),
  })
  process.stdout.write(`${JSON.stringify(fixture, null, 2)}\n`)
}
