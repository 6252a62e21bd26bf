import type pg from 'pg'
import { repairChunks } from '../chain/index.js'
import type { Logger } from '../logger.js'
import type { RangeJobData, RangeJobResult } from '../queue/index.js'
import { deleteRepair, getIntervals, listFilters, listRepairs } from '../store/index.js'
import { crashPoint } from '../utils/crashPoint.js'

export type RepairRunnerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  /** The daemon's own filter: its repairs run here at once, the others' go to the range queue. */
  followerFilterId: string
  chunkBlocks: number
  processRange: (data: RangeJobData) => Promise<RangeJobResult>
  enqueue: (jobs: readonly RangeJobData[]) => Promise<unknown>
}

/**
 * Turns open repairs (`sync_repairs`, written with the marks that caused them) into range jobs until
 * their blocks are stored again for their filter, then closes them. Run by the scheduler, so repairs
 * survive any restart: a repair is closed only once the intervals say its blocks are back.
 */
export function createRepairRunner(context: RepairRunnerContext) {
  const { pool, chainId } = context

  async function run(): Promise<{ open: number; enqueued: number; closed: number }> {
    const repairs = await listRepairs(pool, chainId)
    if (repairs.length === 0) return { open: 0, enqueued: 0, closed: 0 }
    const filters = new Map((await listFilters(pool, chainId)).map((filter) => [filter.filterId, filter]))
    let enqueued = 0
    let closed = 0
    for (const repair of repairs) {
      const range = [repair.fromBlock, repair.toBlock] as const
      const chunks = repairChunks(range, await getIntervals(pool, chainId, repair.filterId, range), context.chunkBlocks)
      const filter = filters.get(repair.filterId)
      if (chunks.length === 0 || !filter) {
        await deleteRepair(pool, repair)
        closed++
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
        for (const job of jobs) await context.processRange(job)
      } else {
        await context.enqueue(jobs)
        enqueued += jobs.length
      }
      context.logger.debug({ chain_id: chainId, filter_id: repair.filterId, from_block: repair.fromBlock, to_block: repair.toBlock, reason: repair.reason, jobs: jobs.length }, 'repairing blocks')
    }
    crashPoint('repairs-enqueued')
    return { open: repairs.length - closed, enqueued, closed }
  }

  return { run }
}

export type RepairRunner = ReturnType<typeof createRepairRunner>
