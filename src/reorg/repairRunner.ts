import type pg from 'pg'
import { repairChunks } from './marks.js'
import type { Logger } from '../internal/logger.js'
import { FatalError, toKindedError } from '../rpc/index.js'
import {
  clearRepairRetry,
  closeRepairIfStored,
  deleteRepair,
  getIntervals,
  listFilters,
  listRepairs,
  recordRepairFailure,
  type FilterRange,
  type Repair,
} from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { briefly } from '../internal/errors.js'

/** Failed attempts after which a repair is quarantined: left open and visible, no longer retried. */
const REPAIR_MAX_FAILURES = 6
/** Wait after a repair's first failure; doubled after each further one. */
const REPAIR_RETRY_BASE_MS = 10_000
const REPAIR_RETRY_MAX_MS = 10 * 60_000

export type RepairRunnerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  /** The daemon's own filter: its repairs run here at once, the others' go to the range queue. */
  followerFilterId: string
  chunkBlocks: number
  processRange: (range: FilterRange) => Promise<unknown>
  enqueue: (jobs: readonly FilterRange[]) => Promise<unknown>
  /** Those of `jobs` that failed for good (retries spent, or a fatal error): why, and when (ms since the epoch). */
  failedJobs: (jobs: readonly FilterRange[]) => Promise<{ reason: string; at: number }[]>
  maxFailures?: number
  retryBaseMs?: number
}

export type RepairRunResult = { open: number; enqueued: number; closed: number; quarantined: number }

/**
 * Turns open repairs (`sync_repairs`, written with the marks that caused them) into range jobs until
 * their blocks are stored again for their filter, then closes them. Run by the scheduler, so repairs
 * survive any restart: a repair is closed only once the intervals say its blocks are back. A repair
 * whose jobs fail is retried with backoff, and quarantined after `maxFailures` failures.
 */
export function createRepairRunner(context: RepairRunnerContext) {
  const { pool, chainId, logger } = context
  const maxFailures = context.maxFailures ?? REPAIR_MAX_FAILURES
  const retryBaseMs = context.retryBaseMs ?? REPAIR_RETRY_BASE_MS

  /** Counts a failed attempt; returns whether it quarantined the repair. */
  async function fail(repair: Repair, error: string): Promise<boolean> {
    const retryInMs = Math.min(REPAIR_RETRY_MAX_MS, retryBaseMs * 2 ** repair.failures)
    const { failures, quarantined } = await recordRepairFailure(pool, repair, { error, retryInMs, maxFailures })
    const fields = {
      chain_id: chainId,
      filter_id: repair.filterId,
      from_block: repair.fromBlock,
      to_block: repair.toBlock,
      failures,
      reason: error,
    }
    if (quarantined) logger.error(fields, 'repair quarantined: its blocks stay missing until it is marked again')
    else logger.warn({ ...fields, retry_in_ms: retryInMs }, 'repair failed: retrying later')
    return quarantined
  }

  async function run(): Promise<RepairRunResult> {
    const repairs = await listRepairs(pool, chainId)
    if (repairs.length === 0) return { open: 0, enqueued: 0, closed: 0, quarantined: 0 }
    const filters = new Map((await listFilters(pool, chainId)).map((filter) => [filter.filterId, filter]))
    let enqueued = 0
    let closed = 0
    let quarantined = 0
    for (const repair of repairs) {
      if (repair.quarantined) {
        quarantined++
        continue
      }
      if (repair.waiting) continue
      const filter = filters.get(repair.filterId)
      if (!filter) {
        await deleteRepair(pool, repair)
        closed++
        continue
      }
      const range = [repair.fromBlock, repair.toBlock] as const
      const chunks = repairChunks(range, await getIntervals(pool, chainId, repair.filterId, range), context.chunkBlocks)
      if (chunks.length === 0) {
        if (await closeRepairIfStored(pool, repair)) closed++
        continue
      }
      const jobs = chunks.map(([fromBlock, toBlock]) => ({
        chainId,
        filterId: filter.filterId,
        addresses: [...filter.addresses],
        topics: [...filter.topics],
        fromBlock,
        toBlock,
      }))
      if (repair.filterId === context.followerFilterId) {
        try {
          for (const job of jobs) await context.processRange(job)
        } catch (error) {
          // A retryable error (the node or database away) is tried again at the next pass, uncounted.
          if (!(toKindedError(error) instanceof FatalError)) throw error
          if (await fail(repair, briefly(error))) quarantined++
          continue
        }
      } else {
        // A failure already counted, or one from before the last mark, is retried now; a new one is counted first.
        const failed = repair.failed ? [] : (await context.failedJobs(jobs)).filter((job) => job.at >= repair.markedAtMs)
        if (failed.length > 0) {
          if (await fail(repair, failed[0]!.reason)) quarantined++
          continue
        }
        await context.enqueue(jobs)
        enqueued += jobs.length
      }
      if (repair.failed) await clearRepairRetry(pool, repair)
      logger.debug(
        {
          chain_id: chainId,
          filter_id: repair.filterId,
          from_block: repair.fromBlock,
          to_block: repair.toBlock,
          reason: repair.reason,
          jobs: jobs.length,
        },
        'repairing blocks',
      )
    }
    crashPoint('repairs-enqueued')
    return { open: repairs.length - closed, enqueued, closed, quarantined }
  }

  return { run }
}

export type RepairRunner = ReturnType<typeof createRepairRunner>
